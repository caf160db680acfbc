import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { catalogAdmin } from "./helpers.ts"

// Issue 40: the public catalogue's reads are made cheap by HTTP caching inside the one pipeline:
// an ETag, `Cache-Control: public, max-age=60`, and 304 on `If-None-Match`.
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
})
afterAll(() => app.dispose())

describe("catalogue HTTP caching (issue 40)", () => {
  test("GET /v1/plans answers an ETag and Cache-Control, and 304 with no body on If-None-Match", async () => {
    await admin.createPlan()
    const first = await app.get("/v1/plans")
    expect(first.status).toBe(200)
    expect(first.headers.get("cache-control")).toBe("public, max-age=60")
    const etag = first.headers.get("etag")
    expect(etag).toMatch(/^"[^"]+"$/)

    const again = await app.request("GET", "/v1/plans", { headers: { "if-none-match": etag! } })
    expect(again.status).toBe(304)
    expect(again.text).toBe("")
    expect(again.headers.get("etag")).toBe(etag)
    expect(again.headers.get("cache-control")).toBe("public, max-age=60")

    // a weak form and a list naming it match too; another tag does not
    expect((await app.request("GET", "/v1/plans", { headers: { "if-none-match": `"x", W/${etag}` } })).status).toBe(304)
    const other = await app.request("GET", "/v1/plans", { headers: { "if-none-match": '"other"' } })
    expect(other.status).toBe(200)
    expect(other.body.success).toBe(true)
  })

  test("the ETag changes when the catalogue does, and the old one no longer gets 304", async () => {
    const before = (await app.get("/v1/plans")).headers.get("etag")!
    await admin.createPlan()
    // the catalogue cache is invalidated by LISTEN/NOTIFY: wait for the new list
    let after = before
    for (let i = 0; i < 50 && after === before; i++) {
      await Bun.sleep(50)
      after = (await app.get("/v1/plans")).headers.get("etag")!
    }
    expect(after).not.toBe(before)
    expect((await app.request("GET", "/v1/plans", { headers: { "if-none-match": before } })).status).toBe(200)
  })

  test("a plan, its cycles and a cycle are cached the same way; errors and other routes are not", async () => {
    const plan = await admin.createPlan()
    for (const path of [`/v1/plans/${plan.id}`, `/v1/plans/${plan.id}/cycles`]) {
      const res = await app.get(path)
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("public, max-age=60")
      const etag = res.headers.get("etag")!
      expect((await app.request("GET", path, { headers: { "if-none-match": etag } })).status).toBe(304)
    }
    const missing = await app.get("/v1/plans/999999")
    expect(missing.status).toBe(404)
    expect(missing.headers.get("etag")).toBeNull()
    const status = await app.get("/v1/status")
    expect(status.headers.get("etag")).toBeNull()
  })
})
