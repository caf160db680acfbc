import type { PGlite } from "@electric-sql/pglite"
import { afterAll, describe, expect, test } from "bun:test"
import type { TestApp } from "../support/app.ts"
import { appOnPrivateDatabase } from "../support/private-database.ts"

// [D11]: a lost database is 503 `Service temporarily unavailable.` with Retry-After; [D10] status.
describe("database lost", () => {
  let app: TestApp | undefined
  let db: PGlite | undefined
  afterAll(async () => {
    await app?.dispose().catch(() => {})
    await db?.close().catch(() => {})
  })

  test("status and routes answer 503 in the envelope when the database goes away", async () => {
    const made = await appOnPrivateDatabase()
    ;({ app, db } = made)
    const { server } = made
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
