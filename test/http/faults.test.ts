import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Redacted } from "effect"
import { pgClientOptions, runMigrations } from "../../src/platform/Database.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D11]: a lost database is 503 `Service temporarily unavailable.` with Retry-After; [D10] status.
describe("database lost", () => {
  let app: TestApp | undefined
  let db: PGlite | undefined
  afterAll(async () => {
    await app?.dispose().catch(() => {})
    await db?.close().catch(() => {})
  })

  test("status and routes answer 503 in the envelope when the database goes away", async () => {
    db = await PGlite.create()
    const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 4 })
    await server.start()
    const url = `postgres://postgres@${server.getServerConn()}/postgres`
    await Effect.runPromise(runMigrations.pipe(Effect.provide(PgClient.layer(pgClientOptions(Redacted.make(url), 1)))))
    app = await makeTestApp({ database: { url, embedded: true } })
    const user = await app.createUser()

    expect((await app.get("/v1/status")).status).toBe(200)
    await server.stop()

    const status = await app.get("/v1/status")
    expect(status.status).toBe(503)
    expect(status.body).toEqual({
      success: false,
      message: "Service temporarily unavailable.",
      data: { database: "unavailable" }
    })
    expect(status.headers.get("retry-after")).not.toBeNull()

    // a protected route needs the database for the token itself
    const res = await app.get("/v1/user", { token: user.token })
    expect(res.status).toBe(503)
    expect(res.body).toEqual({ success: false, message: "Service temporarily unavailable." })
    expect(res.headers.get("retry-after")).not.toBeNull()
  }, 60_000)
})
