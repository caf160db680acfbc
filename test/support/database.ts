import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import pg from "pg"
import { runMigrations, sqlClientLayer } from "../../src/platform/Database.ts"
import { ReadSql } from "../../src/platform/ReadSql.ts"

/**
 * One database for the whole `bun test` run: an in-memory PGlite on a loopback socket, or a
 * fresh database on the PostgreSQL of `TEST_DATABASE_URL`. Migrated once; each test file
 * starts from empty tables (`resetDatabase`). Booted by the first file that asks (`makeTestApp`,
 * `sharedDatabase()`), never by a preload (issue 35): a file of pure tests boots nothing.
 */
interface SharedDatabase {
  readonly url: string
  readonly embedded: boolean
}

const KEY = Symbol.for("vpn-api/test-database")
type Holder = { [KEY]?: Promise<SharedDatabase> }

const create = async (): Promise<SharedDatabase> => {
  const external = process.env["TEST_DATABASE_URL"]
  if (external) {
    const name = `vpn_test_${process.pid}_${Date.now()}`
    const admin = new pg.Client({ connectionString: external })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    const url = new URL(external)
    url.pathname = `/${name}`
    process.on("exit", () => {})
    return migrate({ url: url.toString(), embedded: false })
  }
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 16 })
  await server.start()
  return migrate({ url: `postgres://postgres@${server.getServerConn()}/postgres`, embedded: true })
}

/** the app's driver (issue 8): `Bun.SQL`, or `pg` with `DB_DRIVER=pg` */
const driver = process.env["DB_DRIVER"] === "pg" ? "pg" : "bun"

/** `TEST_DATABASE_URL` through a transaction pooler ([D126], scripts/with-pgbouncer.sh): no named statements */
const pooled = process.env["TEST_DATABASE_DIRECT_URL"] !== undefined

const clientLayer = (shared: SharedDatabase, maxConnections: number) =>
  sqlClientLayer(Redacted.make(shared.url), maxConnections, { embedded: shared.embedded, driver, pooled: pooled && !shared.embedded })

const migrate = (shared: SharedDatabase) => Effect.runPromise(runMigrations.pipe(Effect.provide(clientLayer(shared, 1)), Effect.as(shared)))

export const sharedDatabase = (): Promise<SharedDatabase> => {
  const holder = globalThis as Holder
  return (holder[KEY] ??= create())
}

/** The SQL client layer of one test file (one connection on PGlite: it is one session). */
export const testSqlLayer = (shared: SharedDatabase) => clientLayer(shared, shared.embedded ? 1 : 10)

/** Empties every table of the product and restarts its ids. */
export const resetDatabase = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tables = yield* sql<{ tablename: string }>`
    select tablename from pg_tables where schemaname = current_schema() and tablename <> 'schema_migrations'`
  if (tables.length === 0) return
  yield* sql.unsafe(`truncate ${tables.map((t) => `"${t.tablename}"`).join(", ")} restart identity cascade`)
})

/** the SQL client, and the reads that may lag ([D126]) on it too */
export const sqlLayerFor = (shared: SharedDatabase): Layer.Layer<SqlClient.SqlClient | ReadSql> =>
  ReadSql.Primary.pipe(Layer.provideMerge(Layer.orDie(testSqlLayer(shared))))

// Booted when a file first imports this module (directly or through `app.ts`): at import, not in
// the file's `beforeAll`, because Bun gives a hook 5 s whatever bunfig.toml says (only the CLI's
// `--timeout` reaches hooks) and a cold boot and migration takes longer on a busy machine.
await sharedDatabase()
