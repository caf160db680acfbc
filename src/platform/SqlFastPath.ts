import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import * as Statement from "@effect/sql/Statement"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"

/**
 * A leaner way from a statement to our connection (issue 8).
 *
 * Every `sql\`...\`` of `@effect/sql` 0.52 runs through `withConnection` on its statement
 * class: a `sql.execute` span with six attributes, a new `Scope` opened and closed around the
 * connection, then the query. With the tracer unused (no exporter) and our client's connections
 * needing no scope (`Bun.SQL` pools them itself), that wrapping was half of what a query cost
 * the server (docs/benchmarks.md, "Figures behind the code"). Statements of a client
 * registered here skip it: the statement is compiled as before and runs on the transaction's
 * connection when one is open (the same `TransactionConnection` that `withTransaction` sets),
 * else on the pool. Statements of any other client, or while a statement transformer is set,
 * take the library's own path unchanged. If the library's shape is not what this expects, nothing
 * is installed and every statement takes the library's path.
 */

interface StatementLike {
  readonly acquirer: unknown
  compile(withoutTransform?: boolean): readonly [string, ReadonlyArray<unknown>]
}

type WithConnection = (
  this: StatementLike,
  operation: string,
  f: (connection: Connection, sql: string, params: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>,
  withoutTransform?: boolean
) => Effect.Effect<unknown, unknown>

/** the pooled connection of each registered client, by the acquirer its statements carry */
const pooled = new WeakMap<object, Connection>()
let installed: boolean | undefined

const install = (sample: object): boolean => {
  if (installed !== undefined) return installed
  const proto = Object.getPrototypeOf(sample) as { withConnection?: WithConnection; compile?: unknown }
  const original = proto.withConnection
  if (typeof original !== "function" || typeof proto.compile !== "function" || original.length < 2) {
    installed = false
    return false
  }
  proto.withConnection = function (operation, f, withoutTransform = false) {
    const connection = typeof this.acquirer === "object" && this.acquirer !== null ? pooled.get(this.acquirer) : undefined
    if (connection === undefined) return original.call(this, operation, f, withoutTransform)
    return Effect.withFiberRuntime((fiber: Fiber.RuntimeFiber<unknown, unknown>) => {
      if (fiber.getFiberRef(Statement.currentTransformer)._tag === "Some") {
        return original.call(this, operation, f, withoutTransform)
      }
      const transaction = Context.getOption(fiber.currentContext, Client.TransactionConnection)
      const [sql, params] = this.compile(withoutTransform)
      return f(transaction._tag === "Some" ? transaction.value[0] : connection, sql, params)
    })
  }
  installed = true
  return true
}

/**
 * Registers a client whose pooled connection needs no scope; returns whether the lean path is on.
 * `statement` is any statement of that client (its acquirer identifies the client's statements).
 */
export const registerFastPath = (statement: object, connection: Connection): boolean => {
  const acquirer = (statement as Partial<StatementLike>).acquirer
  if (typeof acquirer !== "object" || acquirer === null || !install(statement)) return false
  pooled.set(acquirer, connection)
  return true
}
