import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

describe("CORS_ORIGINS [D1] [D11]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp({ config: { corsOrigins: ["https://app.example"] } })
  })
  afterAll(() => app.dispose())

  test("a preflight from an allowed origin is answered with the CORS headers", async () => {
    const res = await app.request("OPTIONS", "/v1/status", {
      headers: { origin: "https://app.example", "access-control-request-method": "GET" }
    })
    expect(res.status).toBe(204)
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example")
    expect(res.headers.get("access-control-allow-methods")).toContain("GET")
  })

  test("responses to an allowed origin carry Access-Control-Allow-Origin; others do not", async () => {
    const ok = await app.get("/v1/status", { headers: { origin: "https://app.example" } })
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example")
    const other = await app.get("/v1/status", { headers: { origin: "https://evil.example" } })
    expect(other.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("no CORS_ORIGINS", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp({ reset: false })
  })
  afterAll(() => app.dispose())

  test("no CORS headers at all", async () => {
    const res = await app.get("/v1/status", { headers: { origin: "https://app.example" } })
    expect(res.headers.get("access-control-allow-origin")).toBeNull()
  })
})

describe("GENERAL_RATE_LIMIT [D30]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp({ config: { generalRateLimit: 3 }, reset: false })
  })
  afterAll(() => app.dispose())

  test("per address, in memory, 429 with Retry-After past the limit, a new window after 60 s", async () => {
    const from = { headers: { "x-forwarded-for": "203.0.113.7" } }
    for (let i = 0; i < 3; i++) expect((await app.get("/v1/status", from)).status).toBe(200)
    const blocked = await app.get("/v1/status", from)
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(blocked.headers.get("x-ratelimit-limit")).toBeNull()
    // another address is counted apart
    expect((await app.get("/v1/status", { headers: { "x-forwarded-for": "203.0.113.8" } })).status).toBe(200)
    app.clock.advance(60_000)
    expect((await app.get("/v1/status", from)).status).toBe(200)
  })

  test("per user with a live token: a user's tokens and addresses count together", async () => {
    app.clock.advance(60_000)
    const user = await app.createUser()
    const second = await app.post("/v1/auth/login", {
      body: { email: user.email, password: user.password },
      headers: { "x-forwarded-for": "198.51.100.1" }
    })
    expect(second.status).toBe(200)
    const other: string = second.body.data.token
    // the login above is one of the six routes: it counts against its own limit, not this one
    expect((await app.get("/v1/user", { token: user.token, headers: { "x-forwarded-for": "198.51.100.2" } })).status).toBe(200)
    expect((await app.get("/v1/plans", { token: other, headers: { "x-forwarded-for": "198.51.100.3" } })).status).toBe(200)
    expect((await app.get("/v1/services", { token: user.token, headers: { "x-forwarded-for": "198.51.100.4" } })).status).toBe(200)
    const blocked = await app.get("/v1/user", { token: other, headers: { "x-forwarded-for": "198.51.100.5" } })
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
    // another user is counted apart
    const someone = await app.createUser()
    expect((await app.get("/v1/user", { token: someone.token, headers: { "x-forwarded-for": "198.51.100.5" } })).status).toBe(200)
  })

  test("a token that is not live counts against the address: made-up tokens buy nothing", async () => {
    app.clock.advance(60_000)
    const from = (n: number) => ({ token: `${n}|${"x".repeat(40)}`, headers: { "x-forwarded-for": "203.0.113.50" } })
    for (let i = 1; i <= 3; i++) expect((await app.get("/v1/plans", from(i))).status).toBe(200)
    expect((await app.get("/v1/plans", from(4))).status).toBe(429)
    expect((await app.get("/v1/user", from(5))).status).toBe(429)
    expect((await app.get("/v1/plans", { headers: { "x-forwarded-for": "203.0.113.50" } })).status).toBe(429)
  })
})
