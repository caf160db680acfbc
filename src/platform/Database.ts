import type { PGlite } from "@electric-sql/pglite"
import type { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import pg from "pg"
import { migrations } from "../../migrations/index.ts"
import { isConnectionLoss } from "./SqlErrors.ts"
import { DataDirInUse, lockDataDir, SOCKET_NAME } from "./DataDirLock.ts"
import * as BunSqlClient from "./BunSqlClient.ts"
import { registerPool } from "./DatabaseFigures.ts"
import { ReadSql } from "./ReadSql.ts"
import { AppConfig, type DbDriver } from "./Config.ts"

/** What the process runs on, for the start-up line and `/v1/status`. */
export class DatabaseInfo extends Context.Tag("DatabaseInfo")<
  DatabaseInfo,
  {
    readonly mode: "embedded" | "postgresql"
    readonly migrationsApplied: ReadonlyArray<readonly [id: number, name: string]>
  }
>() {}

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

/**
 * `DATA_DIR` private to the process's user ([D2] rev. 2): the directory 0700, every file under it
 * 0600. Files made from now on by this process are 0600 too (umask 077: the embedded process
 * writes nothing meant for others); PGlite gives the files it unpacks its own modes, so what
 * exists is also set by hand.
 */
export const privateDataDir = (dir: string) => {
  process.umask(0o077)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  privatise(dir)
}

const privatise = (path: string) => {
  const stat = lstatSync(path)
  if (stat.isSymbolicLink()) return
  if (stat.isDirectory()) {
    chmodSync(path, 0o700)
    for (const entry of readdirSync(path)) privatise(join(path, entry))
  } else {
    chmodSync(path, 0o600)
  }
}

/** The embedded PostgreSQL cluster's directory inside `DATA_DIR`. */
export const PGDATA = "pgdata"

/** A Unix socket path must fit in `sockaddr_un` (108 bytes on Linux, 104 on macOS). */
const MAX_SOCKET_PATH = 100
export { SOCKET_NAME }

/**
 * How each driver reaches a PostgreSQL socket in `dir` (its file named as PostgreSQL names it).
 * Every part is written out, port and TLS included ([D117]): what a URL leaves out, both drivers
 * take from the libpq environment (`PGPORT`, `PG_PORT`, `PGSSLMODE`, ...), which names some
 * other PostgreSQL, never this one.
 */
export const socketUrl = (dir: string, driver: DbDriver) =>
  `postgres://postgres@localhost:5432/postgres?${driver === "pg" ? "host" : "path"}=${encodeURIComponent(dir)}&sslmode=disable`

/**
 * PGlite served on a Unix socket in a 0700 directory, so the same SQL client reaches it and no
 * other local user or process can ([D2] rev. 2: no TCP port). The socket lives in `DATA_DIR`, or,
 * when that path is too long for a socket, in a fresh 0700 directory of the system's temp dir.
 * PGlite, its socket server and its WebAssembly are loaded only here: a server on PostgreSQL never
 * loads them (issue 8: idle memory and start-up).
 */
export const embeddedServer = (dataDir: string | undefined, driver: DbDriver = "bun") =>
  Effect.gen(function* () {
    const root = dataDir === undefined ? undefined : resolve(dataDir)
    if (root !== undefined) {
      yield* Effect.sync(() => privateDataDir(root))
      // issue 34: one process at a time on the directory, taken before the database is opened
      yield* lockDataDir(root)
    }
    return yield* embeddedOn(root, driver)
  })

const embeddedOn = (root: string | undefined, driver: DbDriver) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<{ db: PGlite; server: PGLiteSocketServer; url: string; scratch: string | undefined }> => {
      const [{ PGlite }, { PGLiteSocketServer }, { loadPgliteAssets }] = await Promise.all([
        import("@electric-sql/pglite"),
        import("@electric-sql/pglite-socket"),
        import("./PgliteAssets.ts")
      ])
      const db = await PGlite.create({ ...(root ? { dataDir: join(root, PGDATA) } : {}), ...(await loadPgliteAssets()) })
      if (root !== undefined) privatise(root)
      const fits = root !== undefined && join(root, SOCKET_NAME).length <= MAX_SOCKET_PATH
      const scratch = fits ? undefined : mkdtempSync(join(tmpdir(), "vpn-api-"))
      const socketDir = scratch ?? root!
      const path = join(socketDir, SOCKET_NAME)
      // a socket file left by a process that was killed: the lock is ours and `lockDataDir` found
      // nobody answering on it (a socket that accepts connections is never removed)
      rmSync(path, { force: true })
      const server = new PGLiteSocketServer({ db, path, maxConnections: 1 })
      await server.start()
      chmodSync(path, 0o600)
      return { db, server, url: socketUrl(socketDir, driver), scratch }
    }),
    ({ db, scratch, server }) =>
      Effect.promise(async () => {
        await server.stop()
        await db.close()
        if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
      })
  )

/**
 * Parameterised statements are prepared once per connection under a name (issue 8): `pg` sends
 * them unnamed, so PostgreSQL parsed and planned every query again. Names map 1:1 to texts for the
 * life of the process (at most 2 000; any further text runs unnamed as before).
 */
const statementNames = new Map<string, string>()
const statementName = (text: string): string | undefined => {
  let name = statementNames.get(text)
  if (name === undefined && statementNames.size < 2000) {
    name = `vpn_${statementNames.size}`
    statementNames.set(text, name)
  }
  return name
}

type Query = (...args: Array<unknown>) => unknown

const prepareNamed = (client: pg.PoolClient) => {
  const target = client as unknown as { query: Query }
  const query = target.query.bind(client) as Query
  target.query = (text: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof text === "string" && Array.isArray(values) && values.length > 0 ? statementName(text) : undefined
    return name === undefined ? query(text, values, callback) : query({ name, text, values }, callback)
  }
}

/** The `pg` pool of `PgClient.layer`, with named prepared statements on each of its connections. */
export const preparedPgLayer = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layerFromPool({
    applicationName: "vpn-api",
    types,
    acquire: Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const pool = new pg.Pool({
            connectionString: Redacted.value(url),
            max: maxConnections,
            connectionTimeoutMillis: 5_000,
            idleTimeoutMillis: 30_000,
            application_name: "vpn-api",
            types
          })
          pool.on("error", () => {})
          pool.on("connect", prepareNamed)
          await pool.query("select 1")
          // the pool's use for the metrics ([D102])
          const unregister = registerPool({
            max: maxConnections,
            inUse: () => pool.totalCount - pool.idleCount,
            waiting: () => pool.waitingCount
          })
          return { pool, unregister }
        },
        catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(Effect.map(({ pool, unregister }) => Object.assign(pool, { unregister }))),
      (pool) => Effect.sync(pool.unregister).pipe(Effect.zipRight(Effect.promise(() => pool.end())))
    )
  })

/**
 * The app's SQL client on PostgreSQL or on the embedded PGlite (issue 8): `Bun.SQL` by default,
 * with named prepared statements on PostgreSQL and unnamed ones on PGlite (its one session is
 * shared by every socket, so statement names would collide); `DB_DRIVER=pg` keeps the `pg` pool
 * of before, for comparison.
 */
export const sqlClientLayer = (
  url: Redacted.Redacted<string>,
  maxConnections: number,
  options: {
    readonly embedded: boolean
    readonly driver: DbDriver
    /** through a transaction pooler (`DATABASE_DIRECT_URL` set, [D126]): no named prepared statements */
    readonly pooled?: boolean
    /** no connection at start-up (`Bun.SQL` only): the replicas of `DATABASE_READ_URL` */
    readonly lazy?: boolean
  }
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  options.driver === "pg"
    ? options.embedded || options.pooled === true
      ? PgClient.layer(pgClientOptions(url, maxConnections))
      : preparedPgLayer(url, maxConnections)
    : BunSqlClient.layer({
        url,
        maxConnections,
        prepare: !options.embedded && options.pooled !== true,
        connectTimeout: Duration.seconds(5),
        idleTimeout: Duration.seconds(30),
        applicationName: "vpn-api",
        lazy: options.lazy
      })

export const runMigrations = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "schema_migrations" })

/**
 * Instances that start at once on one PostgreSQL take turns to migrate [D4] (issue 9: the
 * migrator creates its table outside its transaction, so the second instance died on a duplicate
 * `schema_migrations`). A session advisory lock on one dedicated connection; the others wait,
 * then find nothing left to apply.
 */
const MIGRATION_LOCK = 726_290_001
export const runMigrationsExclusively = (url: Redacted.Redacted<string>, driver: DbDriver = "bun") =>
  Effect.scoped(
    Effect.gen(function* () {
      // one connection: the lock, the migrations and the unlock share its session
      const ctx = yield* Layer.build(driver === "pg" ? PgClient.layer(pgClientOptions(url, 1)) : sqlClientLayer(url, 1, { embedded: false, driver }))
      const sql = Context.get(ctx, SqlClient.SqlClient)
      yield* sql`select pg_advisory_lock(${MIGRATION_LOCK})`
      return yield* runMigrations.pipe(Effect.provide(ctx), Effect.ensuring(Effect.ignore(sql`select pg_advisory_unlock(${MIGRATION_LOCK})`)))
    })
  )

/** The SQL client on PostgreSQL (`DATABASE_URL`) or on the embedded PGlite, migrated. */
export const DatabaseLive = Layer.scopedContext(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const embedded = Option.isNone(config.databaseUrl)
    const driver = config.dbDriver ?? "bun"
    const url = Option.isSome(config.databaseUrl) ? config.databaseUrl.value : Redacted.make((yield* embeddedServer(config.dataDir, driver)).url)
    // pglite-socket takes one connection
    const connect = Effect.gen(function* () {
      const pooled = Option.isSome(config.databaseDirectUrl ?? Option.none())
      const ctx = yield* Layer.build(sqlClientLayer(url, embedded ? 1 : 10, { embedded, driver, pooled }))
      // the migrations' session lock needs a session of its own: the direct URL behind a pooler
      const direct = Option.getOrElse(config.databaseDirectUrl ?? Option.none(), () => url)
      const applied = embedded ? yield* runMigrations.pipe(Effect.provide(ctx)) : yield* runMigrationsExclusively(direct, driver)
      // the replicas of DATABASE_READ_URL ([D126]) for the reads that may lag; else the primary
      const read = Option.getOrUndefined(config.databaseReadUrl ?? Option.none())
      const readSql =
        read === undefined
          ? Context.get(ctx, SqlClient.SqlClient)
          : Context.get(yield* Layer.build(sqlClientLayer(read, 10, { embedded: false, driver, pooled, lazy: true })), SqlClient.SqlClient)
      return [Context.add(ctx, ReadSql, readSql), applied] as const
    })
    // a PostgreSQL that is still starting (compose starts both at once) is waited for, up to a
    // minute; any other failure ends the start at once
    const [ctx, applied] = yield* connect.pipe(
      Effect.tapError((e) => (isConnectionLoss(e) ? Effect.logWarning("the database is not reachable yet; retrying") : Effect.void)),
      Effect.retry({
        while: isConnectionLoss,
        schedule: Schedule.exponential("250 millis").pipe(Schedule.union(Schedule.spaced("5 seconds")), Schedule.upTo("60 seconds"))
      })
    )
    return ctx.pipe(Context.add(DatabaseInfo, { mode: embedded ? "embedded" : "postgresql", migrationsApplied: applied }))
  }).pipe(Effect.catchAll((e) => (e instanceof DataDirInUse ? Effect.fail(e) : Effect.die(e))))
)

export type Sql = SqlClient.SqlClient
