import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { randomBytes } from "node:crypto"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { RateLimiter } from "../../src/platform/RateLimiter.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 14: hostile input through the HTTP API. [D11] rev. 2 (content types, no 5xx from
// input), [D30] rev. 2 (e-mail keys, IPv6 /64, bounded table), [D1] rev. 2 (TRUST_PROXY).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const from = (ip: string) => ({ "x-forwarded-for": ip })
let counter = 0
const freshEmail = () => `hardening${++counter}.${Date.now()}@example.com`
const invalidBody = (text: string) => ({ success: false, message: "The given data was invalid.", errors: { body: [text] } })
const NOT_JSON = "The body must be sent as application/json."

const multipart = async (fields: Record<string, string>) => {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.set(k, v)
  const request = new Request("http://localhost/", { method: "POST", body: form })
  const contentType = request.headers.get("content-type")!
  return { raw: await request.text(), contentType }
}

describe("a body that is not JSON is never parsed [D11] rev. 2", () => {
  test("form-encoded login is 422 errors.body, not a login past the per-e-mail limit", async () => {
    const email = freshEmail()
    for (let i = 0; i < 5; i++) {
      const res = await app.post("/v1/auth/login", { body: { email, password: "Wrong-password-1" }, headers: from(`10.140.0.${i + 1}`) })
      expect(res.status).toBe(401)
    }
    const form = await app.post("/v1/auth/login", {
      raw: `email=${encodeURIComponent(email)}&password=Wrong-password-1`,
      headers: { ...from("10.140.0.99"), "content-type": "application/x-www-form-urlencoded" }
    })
    expect(form.status).toBe(422)
    expect(form.body).toEqual(invalidBody(NOT_JSON))
  })

  test("multipart is 422, never a 500", async () => {
    const { contentType, raw } = await multipart({ email: freshEmail(), password: "Wrong-password-1" })
    for (const path of ["/v1/auth/login", "/v1/auth/forgot-password", "/v1/auth/register"]) {
      const res = await app.post(path, { raw, headers: { ...from("10.141.0.1"), "content-type": contentType } })
      expect(res.status).toBe(422)
      expect(res.body).toEqual(invalidBody(NOT_JSON))
    }
  })

  test("text/plain, an unknown type and no type at all with a JSON text are 422", async () => {
    const raw = JSON.stringify({ email: freshEmail(), password: "Wrong-password-1" })
    for (const type of ["text/plain", "application/octet-stream", "application/jsonx"]) {
      const res = await app.post("/v1/auth/login", { raw, headers: { ...from("10.142.0.1"), "content-type": type } })
      expect(res.status).toBe(422)
      expect(res.body).toEqual(invalidBody(NOT_JSON))
    }
    const none = await app.request("POST", "/v1/auth/login", { raw, headers: { ...from("10.142.0.2"), "content-type": "" } })
    expect(none.status).toBe(422)
    expect(none.body).toEqual(invalidBody(NOT_JSON))
  })

  test("JSON with parameters and +json types are JSON", async () => {
    for (const type of ["application/json; charset=utf-8", "Application/JSON", "application/vnd.api+json"]) {
      const res = await app.post("/v1/auth/login", {
        raw: JSON.stringify({ email: freshEmail(), password: "Wrong-password-1" }),
        headers: { ...from("10.143.0.1"), "content-type": type }
      })
      expect(res.status).toBe(401)
      expect(res.body.message).toBe("Invalid credentials.")
    }
  })

  test("routes without a payload work with no body, no type, or any body", async () => {
    const user = await app.createUser()
    const bare = await app.request("POST", "/v1/auth/logout-all", { token: user.token })
    expect(bare.status).toBe(200)
    const other = await app.createUser()
    const form = await app.post("/v1/auth/logout", {
      token: other.token,
      raw: "a=1",
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(form.status).toBe(200)
  })

  test("authentication still answers before the body is refused", async () => {
    const res = await app.put("/v1/account/profile", { raw: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } })
    expect(res.status).toBe(401)
    const user = await app.createUser()
    const refused = await app.put("/v1/account/profile", { token: user.token, raw: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } })
    expect(refused.status).toBe(422)
    expect(refused.body).toEqual(invalidBody(NOT_JSON))
  })

  test("JSON nested 100 000 deep is 422 errors.body, never a 500", async () => {
    for (const raw of ["[".repeat(100_000) + "]".repeat(100_000), '{"a":'.repeat(100_000) + "1" + "}".repeat(100_000), "[".repeat(100_000)]) {
      const res = await app.post("/v1/auth/register", { raw, headers: from("10.144.0.1") })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["body"])
    }
    const user = await app.createUser()
    const deep = await app.post("/v1/tickets", { token: user.token, raw: `{"subject":"s","message":${"[".repeat(100_000)}${"]".repeat(100_000)}}` })
    expect(deep.status).toBe(422)
    expect(Object.keys(deep.body.errors)).toEqual(["body"])
  })
})

describe("a path that does not decode is a 404, whatever else is wrong [D11]", () => {
  test("GET and HEAD of an impossible id; a bad body on an impossible id", async () => {
    for (const method of ["GET", "HEAD"]) {
      const res = await app.request(method, "/v1/plans/abc")
      expect(res.status).toBe(404)
    }
    const user = await app.createUser()
    const reply = await app.post("/v1/tickets/abc/reply", { token: user.token, body: { message: 42 } })
    expect(reply.status).toBe(404)
    const real = await app.post("/v1/tickets/1/reply", { token: user.token, body: { message: 42 } })
    expect(real.status).toBe(422)
    expect(real.body.errors.message).toHaveLength(1)
  })
})

describe("e-mail keys of the limits are valid addresses only [D30] rev. 2", () => {
  const hostile = () => [randomBytes(2400).toString("base64") + "@example.com", "a\u0000b@example.com", "\u0000", randomBytes(1500).toString("base64")]

  test("3 KB and NUL e-mails on login and forgot-password are 4xx, never 5xx", async () => {
    let n = 0
    for (const email of hostile()) {
      for (const path of ["/v1/auth/login", "/v1/auth/forgot-password"]) {
        const res = await app.post(path, { body: { email, password: "Wrong-password-1" }, headers: from(`10.145.0.${++n}`) })
        expect([401, 422]).toContain(res.status)
        expect(res.status).toBe(422)
        expect(Object.keys(res.body.errors)).toContain("email")
      }
    }
    const keys = await app.sql<{ key: string }>`select key from rate_limits where key like ${"%:email:%"} and length(key) > 300`
    expect(keys).toEqual([])
  })

  test("an invalid e-mail counts only against the address", async () => {
    for (let i = 0; i < 7; i++) {
      const res = await app.post("/v1/auth/login", { body: { email: "not-an-email", password: "x" }, headers: from(`10.146.0.${i + 1}`) })
      expect(res.status).toBe(422)
    }
    const rows = await app.sql<{ key: string }>`select key from rate_limits where key like ${"%not-an-email%"}`
    expect(rows).toEqual([])
  })

  test("a valid e-mail is keyed normalised, as validation reads it", async () => {
    const email = freshEmail()
    for (let i = 0; i < 3; i++) {
      const res = await app.post("/v1/auth/forgot-password", { body: { email: `  ${email.toUpperCase()} ` }, headers: from(`10.147.0.${i + 1}`) })
      expect(res.status).toBe(200)
    }
    const blocked = await app.post("/v1/auth/forgot-password", { body: { email }, headers: from("10.147.0.9") })
    expect(blocked.status).toBe(429)
  })
})

describe("expired counters are purged [D30] [D80] rev. 2", () => {
  test("purgeExpired deletes the rows of ended windows and keeps live ones", async () => {
    await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("10.148.0.1") })
    app.clock.advance(61_000)
    await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("10.148.0.2") })
    const before = await app.sql<{ n: number }>`select count(*)::int as n from rate_limits`
    expect(before[0]!.n).toBeGreaterThan(2)
    const deleted = await app.run(RateLimiter.purgeExpired)
    expect(deleted).toBeGreaterThan(0)
    const left = await app.sql<{ key: string }>`select key from rate_limits order by key`
    expect(left.map((r) => r.key).sort()).toEqual(
      left
        .map((r) => r.key)
        .filter((k) => k.includes("10.148.0.2") || k.includes("email"))
        .sort()
    )
    expect(left.some((r) => r.key.includes("10.148.0.2"))).toBe(true)
    expect(left.some((r) => r.key.includes("10.148.0.1"))).toBe(false)
    expect(left).toHaveLength(2)
  })
})

describe("the jobs keep rate_limits bounded [D80] rev. 2", () => {
  test("a run of the jobs deletes the counters of ended windows", async () => {
    await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("10.151.0.1") })
    const before = await app.sql<{ n: number }>`select count(*)::int as n from rate_limits where key like ${"%10.151.0.1"}`
    expect(before[0]!.n).toBe(1)
    app.clock.advance(61_000)
    await app.run(runJobsOnce)
    const after = await app.sql<{ n: number }>`select count(*)::int as n from rate_limits`
    expect(after[0]!.n).toBe(0)
  })

  test("a run of the jobs deletes spent and expired mail tokens, and keeps live ones", async () => {
    const user = await app.createUser()
    // a reset link (valid 60 min) and, an hour later, a second one: the first has expired by then
    await app.post("/v1/auth/forgot-password", { body: { email: user.email }, headers: from("10.151.0.2") })
    app.clock.advance(61 * 60_000)
    await app.post("/v1/auth/forgot-password", { body: { email: user.email }, headers: from("10.151.0.3") })
    const tokens = () => app.sql<{ n: number }>`select count(*)::int as n from mail_tokens where user_id = ${user.id}`
    expect((await tokens())[0]!.n).toBe(2)
    await app.run(runJobsOnce)
    expect((await tokens())[0]!.n).toBe(1)
  })
})

describe("the client address [D1] [D30] rev. 2", () => {
  test("TRUST_PROXY=1: the entry the proxy appended counts, not one the client wrote", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from(`203.0.113.${i + 1}, 10.149.0.1`) })
      expect(res.status).toBe(200)
    }
    const blocked = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("198.51.100.77, 10.149.0.1") })
    expect(blocked.status).toBe(429)
  })

  test("an IPv6 client counts as its /64", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from(`2001:db8:aa:1::${i + 1}`) })
      expect(res.status).toBe(200)
    }
    const sameNet = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("2001:0db8:00aa:0001:ffff:1:2:3") })
    expect(sameNet.status).toBe(429)
    const otherNet = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("2001:db8:aa:2::1") })
    expect(otherNet.status).toBe(200)
  })
})

describe("TRUST_PROXY=2", () => {
  let two: TestApp
  beforeAll(async () => {
    two = await makeTestApp({ config: { trustProxy: 2 }, reset: false })
  })
  afterAll(() => two.dispose())

  test("the second entry from the right is the client", async () => {
    for (let i = 0; i < 3; i++) {
      const res = await two.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from(`1.1.1.${i + 1}, 10.150.0.1, 10.0.0.${i + 1}`) })
      expect(res.status).toBe(200)
    }
    const blocked = await two.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from("10.150.0.1, 10.0.0.9") })
    expect(blocked.status).toBe(429)
  })
})
