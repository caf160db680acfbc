import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import pg from "pg"
import { migrations } from "../../migrations/index.ts"
import { AppConfig } from "./Config.ts"
import { loadPgliteAssets } from "./PgliteAssets.ts"

/** What the process runs on, for the start-up line and `/v1/status`. */
export class DatabaseInfo extends Context.Tag("DatabaseInfo")<DatabaseInfo, {
  readonly mode: "embedded" | "postgresql"
  readonly migrationsApplied: ReadonlyArray<readonly [id: number, name: string]>
}>() {}

/**
 * int8 (counts, byte totals) as JS numbers: every value we store stays far below 2^53.
 * numeric stays a string (money is never a float [D32]); timestamps are Dates.
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"]
}

export const pgClientOptions = (url: Redacted.Redacted<string>, maxConnections: number) => ({
  url,
  maxConnections,
  connectTimeout: Duration.seconds(5),
  idleTimeout: Duration.seconds(30),
  applicationName: "vpn-api",
  types
})

/** A PGlite instance served on a loopback port, so the same pg client reaches it [D2]. */
export const embeddedServer = (dataDir: string | undefined) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      let dir: string | undefined
      if (dataDir !== undefined) {
        dir = resolve(dataDir, "pgdata")
        mkdirSync(dir, { recursive: true })
      }
      const db = await PGlite.create({ ...(dir ? { dataDir: dir } : {}), ...(await loadPgliteAssets()) })
      const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 1 })
      await server.start()
      const url = `postgres://postgres@${server.getServerConn()}/postgres`
      return { db, server, url }
    }),
    ({ db, server }) => Effect.promise(async () => {
      await server.stop()
      await db.close()
    })
  )

export const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "schema_migrations" })

/** The SQL client on PostgreSQL (`DATABASE_URL`) or on the embedded PGlite, migrated. */
export const DatabaseLive = Layer.scopedContext(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const embedded = Option.isNone(config.databaseUrl)
    const url = Option.isSome(config.databaseUrl)
      ? config.databaseUrl.value
      : Redacted.make((yield* embeddedServer(join(config.dataDir))).url)
    const ctx = yield* Layer.build(PgClient.layer(pgClientOptions(url, embedded ? 1 : 10)))
    const applied = yield* runMigrations.pipe(Effect.provide(ctx))
    return ctx.pipe(
      Context.add(DatabaseInfo, { mode: embedded ? "embedded" : "postgresql", migrationsApplied: applied })
    )
  }).pipe(Effect.orDie)
)

export type Sql = SqlClient.SqlClient
