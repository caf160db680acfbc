import * as SqlClient from "@effect/sql/SqlClient"
import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/** members a proxy must answer without a test having asked for them (awaiting, printing) */
const QUIET = new Set(["then", "toJSON", "constructor", "asymmetricMatch", "$$typeof", "nodeType"])

/**
 * The service `tag` made of `members` only, for a `static Test` layer that needs part of a
 * service (issue 35): a member left out is a function that throws, naming itself, when it is
 * called, so a rule that reaches further than its test expected fails loudly instead of doing
 * something half-real. Reading a member does not throw: a service's constructor may pass members
 * on without calling them.
 */
export const partialService = <I, S extends object>(tag: Context.Tag<I, S>, members: Partial<NoInfer<S>>): S =>
  new Proxy(members, {
    get: (target, member) => {
      if (typeof member === "symbol" || member in target) return Reflect.get(target, member)
      if (QUIET.has(member)) return undefined
      return () => {
        throw new Error(`${tag.key}.${member} is not in this Test layer`)
      }
    }
  }) as S

/** `partialService` as a layer */
export const partialLayer = <I, S extends object>(tag: Context.Tag<I, S>, members: Partial<NoInfer<S>>): Layer.Layer<I> =>
  Layer.succeed(tag, partialService(tag, members))

/**
 * A `SqlClient` for rule tests without a database (issue 35): `withTransaction` runs the effect
 * as it is (the Test repositories keep their rows in memory, so there is nothing to commit);
 * any statement throws, naming itself. A rule that still writes SQL of its own is not a unit.
 */
export const SqlClientTest: Layer.Layer<SqlClient.SqlClient> = Layer.sync(SqlClient.SqlClient, () => {
  const statement = () => {
    throw new Error("SqlClientTest: a statement ran in a test without a database")
  }
  const members: Record<string, unknown> = {
    withTransaction: <A>(effect: A) => effect
  }
  return new Proxy(statement, {
    get: (target, member) => {
      if (typeof member === "symbol") return Reflect.get(target, member)
      if (member in members) return members[member]
      if (QUIET.has(member)) return undefined
      return () => {
        throw new Error(`SqlClientTest: sql.${member} is not available without a database`)
      }
    }
  }) as unknown as SqlClient.SqlClient
})
