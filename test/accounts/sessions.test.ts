import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { PASSWORD, register, resetTokenOf, waitForMail } from "./helpers.ts"

// [D99] sessions (live tokens with address and user agent, revoke one) and the activity list.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

let n = 0
const from = (agent: string) => {
  n++
  return { "x-forwarded-for": `203.0.113.${n}`, "user-agent": agent }
}

const login = async (email: string, headers: Record<string, string>, password = PASSWORD) => app.post("/v1/auth/login", { headers, body: { email, password } })

describe("sessions [D99]", () => {
  test("GET lists the live tokens {id, created_at, last_used_at, ip, user_agent, current}; expired ones are gone", async () => {
    const user = await register(app)
    const phone = from("Phone/1.0")
    const laptop = from("Laptop/2.0")
    const first = (await login(user.email, phone)).body.data.token as string
    app.clock.advance(60_000)
    const second = (await login(user.email, laptop)).body.data.token as string
    const res = await app.get("/v1/account/sessions", { token: second })
    expect(res.status).toBe(200)
    const sessions = res.body.data as Array<Record<string, unknown>>
    expect(sessions.length).toBe(3)
    for (const s of sessions) expect(Object.keys(s).sort()).toEqual(["created_at", "current", "id", "ip", "last_used_at", "user_agent"])
    const current = sessions.find((s) => s["current"] === true)!
    expect(current.id).toBe(Number(second.split("|")[0]))
    expect(current.ip).toBe(laptop["x-forwarded-for"])
    expect(current.user_agent).toBe("Laptop/2.0")
    const phoneSession = sessions.find((s) => s["id"] === Number(first.split("|")[0]))!
    expect(phoneSession).toMatchObject({ ip: phone["x-forwarded-for"], user_agent: "Phone/1.0", current: false })
    expect(sessions.filter((s) => s["current"] === true).length).toBe(1)
    expect(res.text).not.toContain(second.split("|")[1]!)
    // 30 days without use: the registration and phone tokens are no longer live, nor listed
    app.clock.advance(29 * 86_400_000)
    await app.get("/v1/user", { token: second })
    app.clock.advance(86_400_000 + 1000)
    const later = await app.get("/v1/account/sessions", { token: second })
    expect(later.body.data.map((s: { id: number }) => s.id)).toEqual([current.id])
  })

  test("last_used_at is written at most once a minute per token", async () => {
    const user = await app.createUser()
    const id = Number(user.token.split("|")[0])
    const lastUsed = async () => (await app.sql<{ at: Date }>`select last_used_at as at from access_tokens where id = ${id}`)[0]!.at.getTime()
    const start = await lastUsed()
    app.clock.advance(30_000)
    await app.get("/v1/user", { token: user.token })
    expect(await lastUsed()).toBe(start)
    app.clock.advance(31_000)
    await app.get("/v1/user", { token: user.token })
    expect(await lastUsed()).toBe(app.clock.get().getTime())
  })

  test("DELETE revokes one of the caller's sessions (that token is then 401); another user's session is 404", async () => {
    const user = await register(app)
    const other = await register(app)
    const second = (await login(user.email, from("Other/1"))).body.data.token as string
    const secondId = Number(second.split("|")[0])
    const otherId = Number(other.token.split("|")[0])
    const foreign = await app.del(`/v1/account/sessions/${otherId}`, { token: user.token })
    expect(foreign.status).toBe(404)
    expect(foreign.body).toEqual({ success: false, message: "Resource not found." })
    expect((await app.get("/v1/user", { token: other.token })).status).toBe(200)
    const missing = await app.del("/v1/account/sessions/999999", { token: user.token })
    expect(missing.status).toBe(404)
    const res = await app.del(`/v1/account/sessions/${secondId}`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ success: true, message: "Session revoked." })
    expect((await app.get("/v1/user", { token: second })).status).toBe(401)
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(200)
  })
})

describe("activity [D99]", () => {
  test("the caller's security events, newest first, with address and user agent; nobody else's; paginated like invoices", async () => {
    const user = await register(app)
    const other = await register(app)
    const agent = from("Activity/1.0")
    app.clock.advance(61_000)
    expect((await login(user.email, agent, "Wrong-Passw0rd-1")).status).toBe(401)
    const token = (await login(user.email, agent)).body.data.token as string
    const newPassword = "N3w-Passw0rd-Horse"
    expect(
      (
        await app.put("/v1/account/password", {
          token,
          headers: agent,
          body: { current_password: PASSWORD, password: newPassword, password_confirmation: newPassword }
        })
      ).status
    ).toBe(200)
    expect((await app.put("/v1/account/profile", { token, body: { email: `changed-${user.email}` } })).status).toBe(200)
    const key = await app.post("/v1/account/api-keys", { token, body: { name: "bot", scopes: ["read"] } })
    expect((await app.del(`/v1/account/api-keys/${key.body.data.id}`, { token })).status).toBe(200)
    expect((await app.post("/v1/account/vpn/revoke-all", { token })).status).toBe(200)
    // the other user's events are not the caller's
    await login(other.email, from("Else/1"), "Wrong-Passw0rd-2")

    const res = await app.get("/v1/account/activity", { token })
    expect(res.status).toBe(200)
    const events = (res.body.data as Array<{ event: string }>).map((e) => e.event)
    expect(events).toEqual(["vpn_access_revoked", "api_key_revoked", "api_key_created", "email_changed", "password_changed", "sign_in", "sign_in_failed"])
    const signIn = res.body.data[5]
    expect(signIn).toMatchObject({ event: "sign_in", via: "password", ip: agent["x-forwarded-for"], user_agent: "Activity/1.0" })
    expect(Object.keys(signIn).sort()).toEqual(["created_at", "event", "id", "ip", "user_agent", "via"])
    expect(res.body.data[6]).toMatchObject({ event: "sign_in_failed", via: "none" })
    expect(res.body.meta).toEqual({ current_page: 1, last_page: 1, per_page: 15, total: 7 })
    expect(res.body.links.first).toBe("http://localhost:3000/v1/account/activity?page=1")
    // no secret in what the list shows
    expect(res.text).not.toContain(newPassword)
    expect(res.text).not.toContain(key.body.data.key)

    // paginated: 15 a page
    for (let i = 0; i < 10; i++) await app.post("/v1/account/vpn/revoke-all", { token })
    const page2 = await app.get("/v1/account/activity?page=2", { token })
    expect(page2.body.meta).toEqual({ current_page: 2, last_page: 2, per_page: 15, total: 17 })
    expect(page2.body.data.map((e: { event: string }) => e.event)).toEqual(["sign_in", "sign_in_failed"])
    expect((await app.get("/v1/account/activity?page=0", { token })).status).toBe(422)
  })

  test("two-factor on/off and a recovery code used at sign-in are events; an API key's calls are marked api_key", async () => {
    const { Secret, TOTP } = await import("otpauth")
    const { TOTP_PARAMETERS } = await import("../../src/accounts/TwoFactor.ts")
    const user = await register(app)
    const setup = await app.post("/v1/account/2fa", { token: user.token })
    const code = (offset = 0) =>
      TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.body.data.secret), timestamp: app.clock.get().getTime() + offset })
    const confirmed = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: code() } })
    expect(confirmed.status).toBe(200)
    app.clock.advance(61_000)
    const signedIn = await app.post("/v1/auth/login", {
      headers: from("Recovery/1"),
      body: { email: user.email, password: PASSWORD, recovery_code: confirmed.body.data.recovery_codes[0] }
    })
    expect(signedIn.status).toBe(200)
    app.clock.advance(61_000)
    expect((await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: code() } })).status).toBe(200)
    const key = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "bot", scopes: ["read", "write"] } })
    expect((await app.post("/v1/account/vpn/revoke-all", { token: key.body.data.key })).status).toBe(200)
    const events = (await app.get("/v1/account/activity", { token: user.token })).body.data as Array<{ event: string; via: string }>
    expect(events.map((e) => e.event)).toEqual([
      "vpn_access_revoked",
      "api_key_created",
      "two_factor_disabled",
      "sign_in",
      "recovery_code_used",
      "two_factor_enabled"
    ])
    expect(events[0]!.via).toBe("api_key")
    // a key may read the activity (a GET of the owner's)
    expect((await app.get("/v1/account/activity", { token: key.body.data.key })).status).toBe(200)
  })

  test("the whole list of [D99]: a password reset (by nobody signed in) and a wrong second factor (a failed sign-in) are events too", async () => {
    const { Secret, TOTP } = await import("otpauth")
    const { TOTP_PARAMETERS } = await import("../../src/accounts/TwoFactor.ts")
    const user = await register(app)
    const setup = await app.post("/v1/account/2fa", { token: user.token })
    const code = () => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.body.data.secret), timestamp: app.clock.get().getTime() })
    expect((await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: code() } })).status).toBe(200)
    app.clock.advance(61_000)
    const wrong = code() === "000000" ? "111111" : "000000"
    // asking for the code is no event; a wrong code is a failed sign-in
    expect((await login(user.email, from("Guess/1"), PASSWORD)).status).toBe(422)
    expect((await app.post("/v1/auth/login", { headers: from("Guess/1"), body: { email: user.email, password: PASSWORD, otp: wrong } })).status).toBe(422)
    app.clock.advance(61_000)
    expect((await app.post("/v1/auth/forgot-password", { headers: from("Reset/1"), body: { email: user.email } })).status).toBe(200)
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject === "Reset your password")
    const newPassword = "Res3t-Passw0rd-Horse"
    const reset = await app.post("/v1/auth/reset-password", {
      headers: from("Reset/1"),
      body: { token: resetTokenOf(mail), email: user.email, password: newPassword, password_confirmation: newPassword }
    })
    expect(reset.status).toBe(200)
    app.clock.advance(61_000)
    const signedIn = await app.post("/v1/auth/login", { headers: from("Back/1"), body: { email: user.email, password: newPassword, otp: code() } })
    expect(signedIn.status).toBe(200)
    const events = (await app.get("/v1/account/activity", { token: signedIn.body.data.token })).body.data as Array<{ event: string; via: string }>
    expect(events.map((e) => e.event)).toEqual(["sign_in", "password_reset", "sign_in_failed", "two_factor_enabled"])
    expect(events[1]).toMatchObject({ event: "password_reset", via: "none", user_agent: "Reset/1" })
    expect(events[2]).toMatchObject({ event: "sign_in_failed", via: "none", user_agent: "Guess/1" })
  })
})
