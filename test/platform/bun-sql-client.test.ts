import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Context, Effect, Either, Exit, Layer, Redacted, Scope, Tracer } from "effect"
import { isConnectionLoss, isUnstorableInput } from "../../src/http/ErrorMapping.ts"
import * as BunSqlClient from "../../src/platform/BunSqlClient.ts"
import { RECONNECT_WINDOW_MS, reconnectUntil } from "../../src/platform/Reconnect.ts"
import { sharedDatabase } from "../support/database.ts"

/**
 * The `Bun.SQL` client (issue 8) keeps the contract of the `pg` client: types in and out,
 * SQLSTATEs, transactions, connection loss. Both statement modes: named prepared statements
 * (PostgreSQL) and unnamed ones (PGlite). With TEST_DATABASE_URL both run on the PostgreSQL test
 * database; without it, each mode on a PGlite of its own (a fresh one takes prepared statements).
 */

interface Target {
  readonly url: string
  readonly close: () => Promise<void>
}

const pgliteTarget = async (): Promise<Target> => {
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 4 })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    close: async () => {
      await server.stop()
      await db.close()
    }
  }
}

const target = async (): Promise<Target> => {
  if (process.env["TEST_DATABASE_URL"]) {
    const shared = await sharedDatabase()
    return { url: shared.url, close: async () => {} }
  }
  return pgliteTarget()
}

/** a client of its own, for one describe block */
const openClient = async (url: string, options: { prepare: boolean; max: number }) => {
  const scope = Effect.runSync(Scope.make())
  const ctx = await Effect.runPromise(
    Layer.buildWithScope(BunSqlClient.layer({ url: Redacted.make(url), maxConnections: options.max, prepare: options.prepare }), scope)
  )
  const sql = Context.get(ctx, SqlClient.SqlClient)
  return {
    sql,
    run: <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromise(Effect.provide(effect, ctx)),
    exit: <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.runPromiseExit(Effect.provide(effect, ctx)),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const failureOf = <A>(exit: Exit.Exit<A, unknown>): unknown => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
  return failure
}

for (const prepare of [true, false]) {
  describe(`BunSqlClient (${prepare ? "named prepared statements" : "unnamed statements"})`, () => {
    let t: Target
    let client: Awaited<ReturnType<typeof openClient>>
    const table = `bun_sql_client_${prepare ? "p" : "u"}`

    beforeAll(async () => {
      t = await target()
      client = await openClient(t.url, { prepare, max: 1 })
      await client.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(`drop table if exists ${table}`)
          yield* sql.unsafe(`create table ${table} (id integer primary key, name text unique, big bigint, doc jsonb)`)
        })
      )
    }, 60_000) // a fresh PGlite takes seconds to start on a loaded 2-core machine

    afterAll(async () => {
      await client?.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`drop table if exists ${table}`))).catch(() => {})
      await client?.close()
      await t?.close()
    })

    test("result types: int8 as number, integer arrays as plain arrays, numeric as string, timestamptz as Date, json parsed, bool, null", async () => {
      const at = new Date("2024-05-06T07:08:09.123Z")
      // three runs: the first, and the runs of the same (prepared) statement after it
      for (let run = 0; run < 3; run++) {
        const rows = await client.run(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              sql<Record<string, unknown>>`
            select ${run}::int8 as n8, 9007199254740991::int8 as max_safe, null::int8 as null8, (select count(*) from pg_class where false) as zero,
              sum(x)::int8 as summed, sum(x) as summed_numeric, ${"12.50"}::numeric as money,
              array[1, 2, 3]::int4[] as ints, array[4, 5]::int8[] as bigs, array[6]::int2[] as smalls, array['a', 'b']::text[] as texts,
              ${at}::timestamptz as at, '{"a": [1, {"b": null}]}'::json as j, '{"k": "v"}'::jsonb as jb,
              true as yes, false as no, null::text as nothing, 7::int4 as i4, 1.5::float8 as f8
            from (values (1::int8), (2::int8)) v(x)`
          )
        )
        expect(rows).toHaveLength(1)
        const row = rows[0]!
        expect(row["n8"]).toBe(run)
        expect(row["max_safe"]).toBe(9007199254740991)
        expect(row["null8"]).toBeNull()
        expect(row["zero"]).toBe(0)
        expect(row["summed"]).toBe(3)
        expect(row["summed_numeric"]).toBe("3")
        expect(row["money"]).toBe("12.50")
        expect(row["ints"]).toEqual([1, 2, 3])
        expect(Array.isArray(row["ints"])).toBe(true)
        expect(row["bigs"]).toEqual([4, 5])
        expect(Array.isArray(row["bigs"])).toBe(true)
        expect(row["smalls"]).toEqual([6])
        expect(Array.isArray(row["smalls"])).toBe(true)
        expect(row["texts"]).toEqual(["a", "b"])
        expect(row["at"]).toBeInstanceOf(Date)
        expect((row["at"] as Date).toISOString()).toBe(at.toISOString())
        expect(row["j"]).toEqual({ a: [1, { b: null }] })
        expect(row["jb"]).toEqual({ k: "v" })
        expect(row["yes"]).toBe(true)
        expect(row["no"]).toBe(false)
        expect(row["nothing"]).toBeNull()
        expect(row["i4"]).toBe(7)
        expect(row["f8"]).toBe(1.5)
      }
    })

    test("rows as values convert the same columns", async () => {
      for (let run = 0; run < 2; run++) {
        const rows = await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select ${run}::int8 as a, 'x' as b, array[1, 2]::int4[] as c`.values))
        expect(rows).toEqual([[run, "x", [1, 2]]])
      }
    })

    test("parameters as pg sends them: numbers against text, JSON text into jsonb, booleans, Dates, bigints", async () => {
      await client.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql`insert into ${sql(table)} (id, name, big, doc) values (${1}, ${"5"}, ${9_000_000_000}, ${JSON.stringify({ a: 1 })}::jsonb)`
          yield* sql`insert into ${sql(table)} (id, name, big, doc) values (${2}, ${"six"}, ${BigInt(12)}, ${"5"}::jsonb)`
        })
      )
      const rows = await client.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ id: number; big: number; doc: unknown; kind: string }>`
          select id, big, doc, jsonb_typeof(doc) as kind from ${sql(table)}
          where name = ${5} or name = ${"six"} order by id`
        )
      )
      expect(rows).toEqual([
        { id: 1, big: 9_000_000_000, doc: { a: 1 }, kind: "object" },
        { id: 2, big: 12, doc: 5, kind: "number" }
      ])
      const [flags] = await client.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ t: string; b: boolean; d: Date; n: number }>`
          select ${true}::text as t, ${false} = false as b, ${new Date("2024-01-02T03:04:05Z")}::timestamptz as d, ${2} + 3 as n`
        )
      )
      expect(flags).toEqual({ t: "true", b: true, d: new Date("2024-01-02T03:04:05Z"), n: 5 })
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from ${sql(table)}`))
    })

    test("a unique violation carries its SQLSTATE as cause.code (23505), with the constraint", async () => {
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`insert into ${sql(table)} (id, name) values (10, 'dup')`))
      const exit = await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`insert into ${sql(table)} (id, name) values (11, 'dup')`))
      const error = failureOf(exit)
      expect(error).toBeInstanceOf(SqlError)
      const cause = (error as SqlError).cause as { code: string; constraint: string; table: string; detail: string }
      expect(cause.code).toBe("23505")
      expect(cause.constraint).toBe(`${table}_name_key`)
      expect(cause.table).toBe(table)
      expect(isConnectionLoss(error)).toBe(false)
      expect(isUnstorableInput(error)).toBe(false)

      // input PostgreSQL cannot store is told apart (a 422 behind the schemas)
      const nul = failureOf(await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select ${"a\u0000b"}::text`)))
      expect(((nul as SqlError).cause as { code: string }).code).toBe("22021")
      expect(isUnstorableInput(nul)).toBe(true)
      const range = failureOf(await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select ${2 ** 40}::int4`)))
      expect(isUnstorableInput(range)).toBe(true)
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from ${sql(table)}`))
    })

    test("a failed transaction rolls back; a successful one commits", async () => {
      const failed = await client.exit(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`insert into ${sql(table)} (id, name) values (20, 'rolled back')`
              return yield* Effect.fail("boom" as const)
            })
          )
        })
      )
      expect(Exit.isFailure(failed)).toBe(true)
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(sql`insert into ${sql(table)} (id, name) values (21, 'committed')`)))
      const rows = await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: number }>`select id from ${sql(table)} order by id`))
      expect(rows).toEqual([{ id: 21 }])
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from ${sql(table)}`))
    })

    test("a nested transaction is a savepoint: its failure undoes only its own work", async () => {
      await client.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`insert into ${sql(table)} (id, name) values (30, 'outer')`
              const inner = yield* Effect.either(
                sql.withTransaction(
                  Effect.gen(function* () {
                    yield* sql`insert into ${sql(table)} (id, name) values (31, 'inner')`
                    // a failing statement: the savepoint, not the transaction, is rolled back
                    yield* sql`insert into ${sql(table)} (id, name) values (30, 'duplicate id')`
                  })
                )
              )
              expect(Either.isLeft(inner)).toBe(true)
              yield* sql`insert into ${sql(table)} (id, name) values (32, 'after')`
            })
          )
        })
      )
      const rows = await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ id: number }>`select id from ${sql(table)} order by id`))
      expect(rows).toEqual([{ id: 30 }, { id: 32 }])
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from ${sql(table)}`))
    })

    test("a failed query inside a transaction gives the connection back: 20 in a row on a pool of one", async () => {
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`insert into ${sql(table)} (id, name) values (40, 'taken')`))
      for (let i = 0; i < 20; i++) {
        const exit = await client.exit(
          Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql
              .withTransaction(
                Effect.gen(function* () {
                  yield* sql`select 1`
                  yield* sql`insert into ${sql(table)} (id, name) values (40, ${`again ${i}`})`
                })
              )
              .pipe(Effect.timeout("5 seconds"))
          )
        )
        expect(((failureOf(exit) as SqlError).cause as { code: string }).code).toBe("23505")
      }
      // and outside a transaction too; the pool still answers
      for (let i = 0; i < 20; i++) {
        const exit = await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 1/0`))
        expect(((failureOf(exit) as SqlError).cause as { code: string }).code).toBe("22012")
      }
      const [row] = await client.run(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`select count(*) as n from ${sql(table)}`.pipe(Effect.timeout("5 seconds")))
      )
      expect(row).toEqual({ n: 1 })
      await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from ${sql(table)}`))
    }, 60_000)

    test("the lean path: no per-query span; inside a transaction every statement runs on its connection", async () => {
      const names: Array<string> = []
      const recording = Effect.tracerWith((base) =>
        Effect.succeed(
          Tracer.make({
            span: (name, parent, context, links, startTime, kind, options) => {
              names.push(name)
              return base.span(name, parent, context, links, startTime, kind, options)
            },
            context: base.context
          })
        )
      )
      const seen = await client.run(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const tracer = yield* recording
          return yield* Effect.withTracer(
            Effect.gen(function* () {
              yield* sql`select ${1}::int as one`
              // a setting local to the transaction is seen by its later statements only on its connection
              return yield* sql.withTransaction(
                Effect.gen(function* () {
                  yield* sql`select set_config('vpn.probe', 'inside', true)`
                  const [a] = yield* sql<{ v: string }>`select current_setting('vpn.probe', true) as v`
                  const [b] = yield* sql<{ v: string }>`select current_setting('vpn.probe', true) as v`
                  return [a!.v, b!.v]
                })
              )
            }),
            tracer
          )
        })
      )
      expect(seen).toEqual(["inside", "inside"])
      expect(names.filter((n) => n === "sql.execute")).toEqual([])
      expect(names).toContain("sql.transaction")
    })

    test("a parameterless text of several statements runs (migrations), its results converted", async () => {
      const results = await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`select 1::int8 as a; select 2::int8 as b`)))
      expect(results as unknown).toEqual([[{ a: 1 }], [{ b: 2 }]])
    })
  })
}

describe("BunSqlClient and a lost database", () => {
  test("the start fails fast when nothing listens", async () => {
    const started = performance.now()
    const exit = await Effect.runPromiseExit(
      Layer.build(BunSqlClient.layer({ url: Redacted.make("postgres://postgres@127.0.0.1:1/postgres"), maxConnections: 1, prepare: true })).pipe(Effect.scoped)
    )
    expect(performance.now() - started).toBeLessThan(5_000)
    const error = failureOf(exit)
    expect(error).toBeInstanceOf(SqlError)
    expect(isConnectionLoss(error)).toBe(true)
  })

  test("queries while the database is gone fail within the reconnect window as a lost connection (503), then work again once it is back", async () => {
    const db = await PGlite.create()
    let server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 1 })
    await server.start()
    const port = Number(server.getServerConn().split(":")[1])
    const client = await openClient(`postgres://postgres@127.0.0.1:${port}/postgres`, { prepare: false, max: 1 })
    try {
      expect(await client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 1 as one`))).toEqual([{ one: 1 }])
      await server.stop()
      // the pool's open connection is gone: a statement sent on it fails at once (it may have
      // reached the server: not tried again)
      const closed = failureOf(await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 1 as one`)))
      expect(isConnectionLoss(closed)).toBe(true)
      // refused connections: the statement was never sent, and is tried again for at most
      // RECONNECT_WINDOW_MS ([D126]); a request's deadline can cut that short (reconnectUntil)
      const started = performance.now()
      const error = failureOf(await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 1 as one`)))
      expect(performance.now() - started).toBeGreaterThan(RECONNECT_WINDOW_MS - 1_500)
      expect(performance.now() - started).toBeLessThan(RECONNECT_WINDOW_MS + 1_000)
      expect(error).toBeInstanceOf(SqlError)
      expect(isConnectionLoss(error)).toBe(true)
      const cut = performance.now()
      const cutError = failureOf(
        await client.exit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 1 as one`).pipe(Effect.locally(reconnectUntil, Date.now())))
      )
      expect(performance.now() - cut).toBeLessThan(1_000)
      expect(isConnectionLoss(cutError)).toBe(true)
      // back while a statement is being tried again: it succeeds
      const pending = client.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`select 2 as two`))
      await Bun.sleep(400)
      server = new PGLiteSocketServer({ db, port, host: "127.0.0.1", maxConnections: 1 })
      await server.start()
      expect(await pending).toEqual([{ two: 2 }])
    } finally {
      await client.close()
      await server.stop()
      await db.close()
    }
  }, 30_000)

  test("Bun's connection error codes are lost connections; server errors and misuse are not", () => {
    const withCause = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })
    const bun = (code: string, message: string) => Object.assign(new Error(message), { code })
    for (const code of [
      "ERR_POSTGRES_CONNECTION_CLOSED",
      "ERR_POSTGRES_CONNECTION_REFUSED",
      "ERR_POSTGRES_CONNECTION_TIMEOUT",
      "ERR_POSTGRES_IDLE_TIMEOUT",
      "ERR_POSTGRES_LIFETIME_TIMEOUT"
    ]) {
      expect(isConnectionLoss(withCause(bun(code, "x")))).toBe(true)
    }
    const server = (errno: string) => BunSqlClient.normaliseCause(Object.assign(new Error("server says no"), { code: "ERR_POSTGRES_SERVER_ERROR", errno }))
    expect((server("57P01") as { code: string }).code).toBe("57P01")
    expect(isConnectionLoss(withCause(server("57P01")))).toBe(true)
    expect(isConnectionLoss(withCause(server("08006")))).toBe(true)
    expect(isConnectionLoss(withCause(server("23505")))).toBe(false)
    expect(isConnectionLoss(withCause(server("40P01")))).toBe(false)
    expect(isConnectionLoss(withCause(bun("ERR_POSTGRES_UNSAFE_TRANSACTION", "Only use sql.begin, sql.reserved or max: 1")))).toBe(false)
    expect(isConnectionLoss(withCause(bun("ERR_POSTGRES_SYNTAX_ERROR", "bad query")))).toBe(false)
  })
})
