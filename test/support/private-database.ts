import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { pgClientOptions, runMigrations } from "../../src/platform/Database.ts"
import { makeTestApp } from "./app.ts"

/**
 * The app on a PGlite of its own, served over a socket the test can stop (a lost database) or
 * damage (a failing query) without touching the shared test database.
 */
export const appOnPrivateDatabase = async () => {
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 4 })
  await server.start()
  const url = `postgres://postgres@${server.getServerConn()}/postgres`
  await Effect.runPromise(runMigrations.pipe(Effect.provide(PgClient.layer(pgClientOptions(Redacted.make(url), 1)))))
  const app = await makeTestApp({ database: { url, embedded: true } })
  return { db, server, app }
}
