import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { freshEmail, PASSWORD, register } from "./helpers.ts"

// [D30] the spec's limits on login (5), forgot-password (3), resend-verification (6), per 60 s window;
// [D11] order: authentication, rate limit, validation.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const from = (ip: string) => ({ "x-forwarded-for": ip })

/** the typed client from the address `ip`, signed in with `token` when given */
const client = (ip: string, token?: string) => typedClient(app, { headers: from(ip), ...(token === undefined ? {} : { token }) })

describe("login: 5 a minute per address and per e-mail", () => {
  test("headers count down; the 6th is 429 with Retry-After; the window reopens after 60 s", async () => {
    const ip = "10.50.0.1"
    for (let i = 0; i < 5; i++) {
      const res = await app.post("/v1/auth/login", { body: { email: freshEmail(), password: "Wrong-password-1" }, headers: from(ip) })
      expect(res.status).toBe(401)
      expect(res.headers.get("x-ratelimit-limit")).toBe("5")
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(4 - i))
    }
    app.clock.advance(20_000)
    const blocked = await app.post("/v1/auth/login", { body: { email: freshEmail(), password: "x" }, headers: from(ip) })
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect(blocked.headers.get("retry-after")).toBe("40")
    expect(blocked.headers.get("x-ratelimit-remaining")).toBe("0")
    // another address is not affected
    const elsewhere = await app.post("/v1/auth/login", { body: { email: freshEmail(), password: "x" }, headers: from("10.50.0.2") })
    expect(elsewhere.status).toBe(401)
    app.clock.advance(40_000)
    const reopened = await app.post("/v1/auth/login", { body: { email: freshEmail(), password: "x" }, headers: from(ip) })
    expect(reopened.status).toBe(401)
    expect(reopened.headers.get("x-ratelimit-remaining")).toBe("4")
  })

  test("one e-mail is limited across different addresses, even with the right password", async () => {
    const user = await register(app)
    for (let i = 0; i < 5; i++) {
      const res = await app.post("/v1/auth/login", {
        body: { email: user.email, password: "Wrong-password-1" },
        headers: from(`10.51.0.${i + 1}`)
      })
      expect(res.status).toBe(401)
    }
    const blocked = await app.post("/v1/auth/login", {
      body: { email: user.email.toUpperCase(), password: PASSWORD },
      headers: from("10.51.0.99")
    })
    expect(blocked.status).toBe(429)
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
    app.clock.advance(61_000)
    const anonymous = await client("10.51.0.99")
    const later = await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))
    expect<number>(later.user.id).toBe(user.id)
  })

  test("invalid requests count too, and the limit answers before validation", async () => {
    const ip = "10.52.0.1"
    for (let i = 0; i < 5; i++) {
      const res = await app.post("/v1/auth/login", { body: {}, headers: from(ip) })
      expect(res.status).toBe(422)
    }
    const res = await app.post("/v1/auth/login", { body: {}, headers: from(ip) })
    expect(res.status).toBe(429)
    app.clock.advance(61_000)
  })
})

describe("forgot-password: 3 a minute", () => {
  test("per address", async () => {
    const ip = "10.53.0.1"
    for (let i = 0; i < 3; i++) {
      const res = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from(ip) })
      expect(res.status).toBe(200)
      expect(res.headers.get("x-ratelimit-limit")).toBe("3")
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(2 - i))
    }
    const blocked = await app.post("/v1/auth/forgot-password", { body: { email: freshEmail() }, headers: from(ip) })
    expect(blocked.status).toBe(429)
    expect(blocked.headers.get("retry-after")).toBe("60")
    app.clock.advance(61_000)
  })

  test("per e-mail across addresses", async () => {
    const email = freshEmail("target")
    for (let i = 0; i < 3; i++) {
      const anonymous = await client(`10.54.0.${i + 1}`)
      await ok(anonymous.accounts.forgotPassword({ payload: { email } }))
    }
    const blocked = await app.post("/v1/auth/forgot-password", { body: { email: email.toUpperCase() }, headers: from("10.54.0.50") })
    expect(blocked.status).toBe(429)
    app.clock.advance(61_000)
  })
})

describe("resend-verification: 6 a minute per user", () => {
  test("the 7th is 429; another user is not affected; without a token it is 401 first", async () => {
    const user = await register(app)
    const other = await register(app)
    for (let i = 0; i < 6; i++) {
      const res = await app.post("/v1/auth/resend-verification", { token: user.token, headers: from(`10.55.0.${i + 1}`) })
      expect(res.status).toBe(200)
      expect(res.headers.get("x-ratelimit-limit")).toBe("6")
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(5 - i))
    }
    const blocked = await app.post("/v1/auth/resend-verification", { token: user.token, headers: from("10.55.0.99") })
    expect(blocked.status).toBe(429)
    expect(blocked.headers.get("retry-after")).toBe("60")
    const otherClient = await client("10.55.0.99", other.token)
    await ok(otherClient.accounts.resendVerification())
    const anonymous = await app.post("/v1/auth/resend-verification", { headers: from("10.55.0.99") })
    expect(anonymous.status).toBe(401)
    app.clock.advance(61_000)
    const me = await typedClient(app, { token: user.token })
    await ok(me.accounts.resendVerification())
  })
})
