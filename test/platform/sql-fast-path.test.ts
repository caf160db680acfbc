import { describe, expect, test } from "bun:test"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import * as Statement from "@effect/sql/Statement"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as Reactivity from "@effect/experimental/Reactivity"
import { registerFastPath } from "../../src/platform/SqlFastPath.ts"

/*
 * Issue 35: the guard of `platform/SqlFastPath.ts`, the one patch on a library's prototype (the
 * statement class of `@effect/sql` 0.52: `withConnection`). It fails the day that class changes
 * shape, so that an upgrade cannot silently drop the lean path or run statements the wrong way.
 * No database: a connection that records what it is asked.
 */
const recording = () => {
  const seen: Array<{ sql: string; params: ReadonlyArray<unknown>; on: string }> = []
  const connection = (on: string): Connection => ({
    execute: (sql, params) =>
      Effect.sync(() => {
        seen.push({ sql, params, on })
        return [{ one: 1 }]
      }),
    executeRaw: (sql, params) => Effect.sync(() => seen.push({ sql, params, on })),
    executeStream: () => Stream.empty,
    executeValues: () => Effect.succeed([]),
    executeUnprepared: (sql, params) =>
      Effect.sync(() => {
        seen.push({ sql, params, on })
        return []
      })
  })
  return { seen, connection }
}

/** `effect` with the names of the spans it opens (the library's path opens `sql.execute` for each statement) */
const spansOf = <A, E>(effect: Effect.Effect<A, E>) => {
  const names: Array<string> = []
  return Effect.flatMap(Effect.tracer, (tracer) =>
    Effect.withTracer(
      effect,
      Tracer.make({
        span: (name, ...rest) => {
          names.push(name)
          return tracer.span(name, ...rest)
        },
        context: tracer.context
      })
    )
  ).pipe(Effect.map((value) => ({ value, names })))
}

const makeClient = (pool: Connection, reserved: Connection) =>
  Client.make({
    acquirer: Effect.succeed(pool),
    transactionAcquirer: Effect.succeed(reserved),
    compiler: PgClient.makeCompiler(),
    spanAttributes: []
  }).pipe(Effect.provide(Reactivity.layer))

describe("the statement class of @effect/sql has the shape SqlFastPath patches (issue 35)", () => {
  test("withConnection and compile are on the statement's prototype; the lean path installs", async () => {
    const { connection } = recording()
    const client = await Effect.runPromise(makeClient(connection("pool"), connection("reserved")))
    const statement = client`select 1`
    const proto = Object.getPrototypeOf(statement) as { withConnection?: unknown; compile?: unknown }
    expect(typeof proto.withConnection).toBe("function")
    expect((proto.withConnection as (...args: Array<unknown>) => unknown).length).toBeGreaterThanOrEqual(2)
    expect(typeof proto.compile).toBe("function")
    expect(registerFastPath(statement, connection("pool"))).toBe(true)
  })

  test("a registered client's statements run on its pool, and on the transaction's connection inside one", async () => {
    const { connection, seen } = recording()
    const pool = connection("pool")
    const { names, value: rows } = await Effect.runPromise(
      spansOf(
        Effect.gen(function* () {
          const sql = yield* makeClient(pool, connection("reserved"))
          expect(registerFastPath(sql`select 1`, pool)).toBe(true)
          const outside = yield* sql`select ${1} as one`
          yield* sql.withTransaction(sql`update t set a = ${2}`)
          return outside
        })
      )
    )
    expect(rows).toEqual([{ one: 1 }])
    // the lean path: no statement span (the transaction keeps its own)
    expect(names.filter((n) => n === "sql.execute")).toEqual([])
    expect(names).toContain("sql.transaction")
    // the compiled statement and its parameters, as the library's own path would send them
    expect(seen.find((s) => s.sql === "select $1 as one")).toEqual({ sql: "select $1 as one", params: [1], on: "pool" })
    expect(seen.find((s) => s.sql === "update t set a = $1")).toEqual({ sql: "update t set a = $1", params: [2], on: "reserved" })
  })

  test("with a statement transformer set, the library's own path runs (the transformer sees the statement)", async () => {
    const { connection, seen } = recording()
    const pool = connection("pool")
    let transformed = 0
    const { names } = await Effect.runPromise(
      spansOf(
        Effect.gen(function* () {
          const sql = yield* makeClient(pool, connection("reserved"))
          registerFastPath(sql`select 1`, pool)
          yield* Statement.withTransformer((self) =>
            Effect.sync(() => {
              transformed++
              return self
            })
          )(sql`select ${3} as three`)
        })
      )
    )
    expect(transformed).toBe(1)
    expect(names.filter((n) => n === "sql.execute")).toEqual(["sql.execute"])
    expect(seen.some((s) => s.sql === "select $1 as three")).toBe(true)
  })
})
