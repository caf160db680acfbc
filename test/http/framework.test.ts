import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D10] [D11]: the framework's own cases, in the envelope.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

describe("status [D10]", () => {
  test("GET /v1/status answers OK with the database", async () => {
    const res = await app.get("/v1/status")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "OK", data: { database: "ok" } })
  })
})

describe("framework failures [D11]", () => {
  test("an unknown path is 404 Resource not found.", async () => {
    const res = await app.get("/v1/does-not-exist")
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
  })

  test("a known path with a method not served is 405 with Allow", async () => {
    const res = await app.request("DELETE", "/v1/status")
    expect(res.status).toBe(405)
    expect(res.body).toEqual({ success: false, message: "Method not allowed." })
    expect(res.headers.get("allow")).toContain("GET")
  })

  test("a body over 1 MiB is 413 Payload too large.", async () => {
    const res = await app.post("/v1/status", { raw: JSON.stringify({ blob: "x".repeat(1024 * 1024 + 10) }) })
    expect(res.status).toBe(413)
    expect(res.body).toEqual({ success: false, message: "Payload too large." })
  })

  test("the OpenAPI document and the docs page are served", async () => {
    const doc = await app.get("/v1/openapi.json")
    expect(doc.status).toBe(200)
    expect(doc.body.paths["/v1/status"]).toBeDefined()
    const docs = await app.get("/docs")
    expect(docs.status).toBe(200)
    expect(docs.text).toContain("swagger")
  })
})

describe("request id", () => {
  test("every response carries X-Request-Id, the client's when it sends one", async () => {
    const res = await app.get("/v1/status", { headers: { "x-request-id": "trace-123" } })
    expect(res.headers.get("x-request-id")).toBe("trace-123")
    const notFound = await app.get("/v1/nope")
    expect(notFound.headers.get("x-request-id")).not.toBeNull()
    const tooLarge = await app.post("/v1/status", { raw: "x".repeat(1024 * 1024 + 1) })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.headers.get("x-request-id")).not.toBeNull()
  })
})
