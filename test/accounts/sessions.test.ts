import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
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

/** the typed client of one token (and request headers: an address, a user agent) */
const as = (token: string, headers: Record<string, string> = {}) => typedClient(app, { token, headers })

/** a sign-in through the typed client: the new token */
const newToken = async (payload: { email: string; password: string; otp?: string; recovery_code?: string }, headers: Record<string, string>) => {
  const anonymous = await typedClient(app, { headers })
  return (await ok(anonymous.accounts.login({ payload }))).token
}

describe("sessions [D99]", () => {
  test("GET lists the live tokens {id, created_at, last_used_at, ip, user_agent, current}; expired ones are gone", async () => {
    const user = await register(app)
    const phone = from("Phone/1.0")
    const laptop = from("Laptop/2.0")
    const first = await newToken({ email: user.email, password: PASSWORD }, phone)
    app.clock.advance(60_000)
    const second = await newToken({ email: user.email, password: PASSWORD }, laptop)
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
    const viaSecond = await as(second)
    await ok(viaSecond.accounts.user())
    app.clock.advance(86_400_000 + 1000)
    const later = await ok(viaSecond.accounts.listSessions())
    expect(later.map((s) => s.id)).toEqual([current.id as number])
  })

  test("last_used_at is written at most once a minute per token", async () => {
    const user = await app.createUser()
    const id = Number(user.token.split("|")[0])
    const lastUsed = async () => (await app.sql<{ at: Date }>`select last_used_at as at from access_tokens where id = ${id}`)[0]!.at.getTime()
    const start = await lastUsed()
    const me = await as(user.token)
    app.clock.advance(30_000)
    await ok(me.accounts.user())
    expect(await lastUsed()).toBe(start)
    app.clock.advance(31_000)
    await ok(me.accounts.user())
    expect(await lastUsed()).toBe(app.clock.get().getTime())
  })

  test("DELETE revokes one of the caller's sessions (that token is then 401); another user's session is 404", async () => {
    const user = await register(app)
    const other = await register(app)
    const second = await newToken({ email: user.email, password: PASSWORD }, from("Other/1"))
    const secondId = Number(second.split("|")[0])
    const otherId = Number(other.token.split("|")[0])
    const foreign = await app.del(`/v1/account/sessions/${otherId}`, { token: user.token })
    expect(foreign.status).toBe(404)
    expect(foreign.body).toEqual({ success: false, message: "Resource not found." })
    const theirs = await as(other.token)
    expect<number>((await ok(theirs.accounts.user())).id).toBe(other.id)
    const missing = await app.del("/v1/account/sessions/999999", { token: user.token })
    expect(missing.status).toBe(404)
    const me = await as(user.token)
    expect(await ok(me.accounts.revokeSession({ path: { session: secondId } }))).toBe("Session revoked.")
    expect((await app.get("/v1/user", { token: second })).status).toBe(401)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
  })
})

describe("activity [D99]", () => {
  test("the caller's security events, newest first, with address and user agent; nobody else's; paginated like invoices", async () => {
    const user = await register(app)
    const other = await register(app)
    const agent = from("Activity/1.0")
    app.clock.advance(61_000)
    expect((await login(user.email, agent, "Wrong-Passw0rd-1")).status).toBe(401)
    const token = await newToken({ email: user.email, password: PASSWORD }, agent)
    const newPassword = "N3w-Passw0rd-Horse"
    const withAgent = await as(token, agent)
    await ok(withAgent.accounts.changePassword({ payload: { current_password: PASSWORD, password: newPassword, password_confirmation: newPassword } }))
    const me = await as(token)
    await ok(me.accounts.updateProfile({ payload: { email: `changed-${user.email}` } }))
    const key = await ok(me.accounts.createApiKey({ payload: { name: "bot", scopes: ["read"] } }))
    await ok(me.accounts.revokeApiKey({ path: { key: key.id } }))
    await ok(me.vpn.revokeVpnAccess())
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
    expect(res.text).not.toContain(key.key)

    // paginated: 15 a page
    for (let i = 0; i < 10; i++) await ok(me.vpn.revokeVpnAccess())
    const page2 = await ok(me.audit.activity({ urlParams: { page: 2 } }))
    expect(page2.meta).toEqual({ current_page: 2, last_page: 2, per_page: 15, total: 17 })
    expect(page2.data.map((e) => e.event)).toEqual(["sign_in", "sign_in_failed"])
    expect((await app.get("/v1/account/activity?page=0", { token })).status).toBe(422)
  })

  test("two-factor on/off and a recovery code used at sign-in are events; an API key's calls are marked api_key", async () => {
    const { Secret, TOTP } = await import("otpauth")
    const { TOTP_PARAMETERS } = await import("../../src/accounts/TwoFactor.ts")
    const user = await register(app)
    const me = await as(user.token)
    const setup = await ok(me.accounts.setUpTwoFactor())
    const code = (offset = 0) => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.secret), timestamp: app.clock.get().getTime() + offset })
    const confirmed = await ok(me.accounts.confirmTwoFactor({ payload: { code: code() } }))
    app.clock.advance(61_000)
    await newToken({ email: user.email, password: PASSWORD, recovery_code: confirmed.data.recovery_codes[0]! }, from("Recovery/1"))
    app.clock.advance(61_000)
    await ok(me.accounts.disableTwoFactor({ payload: { password: PASSWORD, code: code() } }))
    const key = await ok(me.accounts.createApiKey({ payload: { name: "bot", scopes: ["read", "write"] } }))
    const viaKey = await as(key.key)
    await ok(viaKey.vpn.revokeVpnAccess())
    const events = (await ok(me.audit.activity({ urlParams: {} }))).data
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
    await ok(viaKey.audit.activity({ urlParams: {} }))
  })

  test("the whole list of [D99]: a password reset (by nobody signed in) and a wrong second factor (a failed sign-in) are events too", async () => {
    const { Secret, TOTP } = await import("otpauth")
    const { TOTP_PARAMETERS } = await import("../../src/accounts/TwoFactor.ts")
    const user = await register(app)
    const me = await as(user.token)
    const setup = await ok(me.accounts.setUpTwoFactor())
    const code = () => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.secret), timestamp: app.clock.get().getTime() })
    await ok(me.accounts.confirmTwoFactor({ payload: { code: code() } }))
    app.clock.advance(61_000)
    const wrong = code() === "000000" ? "111111" : "000000"
    // asking for the code is no event; a wrong code is a failed sign-in
    expect((await login(user.email, from("Guess/1"), PASSWORD)).status).toBe(422)
    expect((await app.post("/v1/auth/login", { headers: from("Guess/1"), body: { email: user.email, password: PASSWORD, otp: wrong } })).status).toBe(422)
    app.clock.advance(61_000)
    const asker = await typedClient(app, { headers: from("Reset/1") })
    await ok(asker.accounts.forgotPassword({ payload: { email: user.email } }))
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject === "Reset your password")
    const newPassword = "Res3t-Passw0rd-Horse"
    const resetter = await typedClient(app, { headers: from("Reset/1") })
    await ok(
      resetter.accounts.resetPassword({ payload: { token: resetTokenOf(mail), email: user.email, password: newPassword, password_confirmation: newPassword } })
    )
    app.clock.advance(61_000)
    const signedIn = await as(await newToken({ email: user.email, password: newPassword, otp: code() }, from("Back/1")))
    const events = (await ok(signedIn.audit.activity({ urlParams: {} }))).data
    expect(events.map((e) => e.event)).toEqual(["sign_in", "password_reset", "sign_in_failed", "two_factor_enabled"])
    expect(events[1]).toMatchObject({ event: "password_reset", via: "none", user_agent: "Reset/1" })
    expect(events[2]).toMatchObject({ event: "sign_in_failed", via: "none", user_agent: "Guess/1" })
  })
})
