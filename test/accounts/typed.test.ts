import { afterAll, beforeAll, expect, test } from "bun:test"
import type { Effect } from "effect"
import { Secret, TOTP } from "otpauth"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient, withToken } from "../support/typed.ts"
import { anyAddress, freshEmail, PASSWORD, resetTokenOf, verifyTokenOf, waitForMail } from "./helpers.ts"

// The accounts room's main flows through the typed client (issue 24): the answers are decoded by
// the contract's own schemas, so a changed contract breaks this file at compile time.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("register, login, user and profile [D20] [D21]", async () => {
  const anonymous = await typedClient(app, { headers: anyAddress() })
  const email = freshEmail("typed")
  const registered = withToken(
    await ok(
      anonymous.accounts.register({
        payload: { name: "Ada Typed", email, password: PASSWORD, password_confirmation: PASSWORD }
      })
    )
  )
  expect(registered.user).toMatchObject({ name: "Ada Typed", email })
  expect(registered.token.length).toBeGreaterThan(20)

  const login = await ok(anonymous.accounts.login({ payload: { email, password: PASSWORD } }))
  expect(login.user).toEqual({ id: registered.user.id, name: "Ada Typed", email, status: 1 })
  expect(login.token).not.toBe(registered.token)

  const me = await typedClient(app, { token: login.token, headers: anyAddress() })
  const user = await ok(me.accounts.user())
  expect(user).toMatchObject({ id: registered.user.id, email, role: "user", status: 1, email_verified_at: null })
  expect(user.created_at).toBeInstanceOf(Date)

  const profile = await ok(me.accounts.profile())
  expect(profile).toMatchObject({ id: registered.user.id, name: "Ada Typed", email })

  const updated = await ok(me.accounts.updateProfile({ payload: { name: "Ada Renamed" } }))
  expect(updated.data).toMatchObject({ id: registered.user.id, name: "Ada Renamed", email })
  expect(updated.message.length).toBeGreaterThan(0)
  expect((await ok(me.accounts.profile())).name).toBe("Ada Renamed")
})

test("settings: read and change e-mail notifications [D96]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  expect(await ok(me.accounts.settings())).toEqual({ email_notifications: true, telegram_notifications: false })
  const changed = await ok(me.accounts.updateSettings({ payload: { email_notifications: false } }))
  expect(changed.data).toEqual({ email_notifications: false, telegram_notifications: false })
  expect(await ok(me.accounts.settings())).toEqual({ email_notifications: false, telegram_notifications: false })
})

test("password change: the new password signs in, the old one is refused [D24]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token, headers: anyAddress() })
  const message = await ok(
    me.accounts.changePassword({
      payload: { current_password: user.password, password: "Brand-New-Pass-2026", password_confirmation: "Brand-New-Pass-2026" }
    })
  )
  expect(typeof message).toBe("string")
  const anonymous = await typedClient(app, { headers: anyAddress() })
  const login = await ok(anonymous.accounts.login({ payload: { email: user.email, password: "Brand-New-Pass-2026" } }))
  expect(login.user.id).toBe(user.id)
  const refused = await fails(anonymous.accounts.login({ payload: { email: user.email, password: user.password } }))
  expect(refused._tag).not.toBe("ParseError")
})

test("api keys: create, list, use, revoke [D98]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const created = await ok(me.accounts.createApiKey({ payload: { name: "ci", scopes: ["read"] } }))
  expect(created).toMatchObject({ name: "ci", scopes: ["read"], expires_at: null })
  expect(created.key.length).toBeGreaterThan(20)

  const listed = await ok(me.accounts.listApiKeys())
  expect(listed.map((key) => ({ id: key.id, name: key.name, scopes: key.scopes }))).toEqual([{ id: created.id, name: "ci", scopes: ["read"] }])
  expect("key" in listed[0]!).toBe(false)

  // the key reads as its owner
  const viaKey = await typedClient(app, { token: created.key })
  expect((await ok(viaKey.accounts.user())).id).toBe(user.id)

  expect(typeof (await ok(me.accounts.revokeApiKey({ path: { key: created.id } })))).toBe("string")
  expect(await ok(me.accounts.listApiKeys())).toEqual([])
  expect((await fails(viaKey.accounts.user()))._tag).toBe("Unauthenticated")
})

test("sessions: list with the current one marked, revoke another, logout, logout-all [D99]", async () => {
  const user = await app.createUser()
  const anonymous = await typedClient(app, { headers: anyAddress() })
  const second = await ok(anonymous.accounts.login({ payload: { email: user.email, password: user.password } }))
  const third = await ok(anonymous.accounts.login({ payload: { email: user.email, password: user.password } }))

  const me = await typedClient(app, { token: user.token })
  const sessions = await ok(me.accounts.listSessions())
  expect(sessions.length).toBe(3)
  expect(sessions.filter((session) => session.current).length).toBe(1)

  // revoke one that is not the current one: it stops working
  const other = sessions.find((session) => !session.current)!
  await ok(me.accounts.revokeSession({ path: { session: other.id } }))
  expect((await ok(me.accounts.listSessions())).map((session) => session.id)).not.toContain(other.id)

  // logout ends only the token it is sent with
  const clients = await Promise.all([second.token, third.token].map((token) => typedClient(app, { token })))
  const alive: Array<(typeof clients)[number]> = []
  for (const client of clients) if ((await outcome(client.accounts.user())) === "ok") alive.push(client)
  expect(alive.length).toBe(1)
  expect(typeof (await ok(alive[0]!.accounts.logout()))).toBe("string")
  expect((await fails(alive[0]!.accounts.user()))._tag).toBe("Unauthenticated")
  expect((await ok(me.accounts.user())).id).toBe(user.id)

  // logout-all ends every session of the user
  expect(typeof (await ok(me.accounts.logoutAll()))).toBe("string")
  expect((await fails(me.accounts.user()))._tag).toBe("Unauthenticated")
})

const outcome = async <A, E>(effect: Effect.Effect<A, E>) => {
  try {
    await ok(effect)
    return "ok"
  } catch {
    return "failed"
  }
}

test("admin: list users by e-mail, disable and promote one [D70] [D91]", async () => {
  const admin = await app.createUser({ role: "admin" })
  const target = await app.createUser({ name: "To Disable" })
  const client = await typedClient(app, { token: admin.token })

  const page = await ok(client.accountsAdmin.listUsers({ urlParams: { email: target.email } }))
  expect(page.data.map((user) => ({ id: user.id, email: user.email, name: user.name }))).toEqual([{ id: target.id, email: target.email, name: "To Disable" }])
  expect(page.meta.total).toBe(1)

  const disabled = await ok(client.accountsAdmin.updateUser({ path: { user: target.id }, payload: { status: 0 } }))
  expect(disabled).toMatchObject({ id: target.id, status: 0, role: "user" })
  const targetClient = await typedClient(app, { token: target.token })
  expect((await fails(targetClient.accounts.user()))._tag).not.toBe("ParseError")

  const promoted = await ok(client.accountsAdmin.updateUser({ path: { user: target.id }, payload: { status: 1, role: "admin" } }))
  expect(promoted).toMatchObject({ id: target.id, status: 1, role: "admin" })

  // a plain user is refused the admin routes
  expect((await fails((await typedClient(app, { token: (await app.createUser()).token })).accountsAdmin.listUsers({ urlParams: {} })))._tag).toBe("Forbidden")
})

test("e-mail verification and password reset from the mailed links [D22] [D23]", async () => {
  const anonymous = await typedClient(app, { headers: anyAddress() })
  const email = freshEmail("mailed")
  const registered = withToken(
    await ok(anonymous.accounts.register({ payload: { name: "Mailed", email, password: PASSWORD, password_confirmation: PASSWORD } }))
  )
  const verifyMail = await waitForMail(app, (mail) => mail.to === email && mail.text.includes("/verify-email?token="))
  expect(typeof (await ok(anonymous.accounts.verifyEmail({ payload: { token: verifyTokenOf(verifyMail) } })))).toBe("string")
  const me = await typedClient(app, { token: registered.token })
  expect((await ok(me.accounts.user())).email_verified_at).toBeInstanceOf(Date)

  expect(typeof (await ok(anonymous.accounts.forgotPassword({ payload: { email } })))).toBe("string")
  const resetMail = await waitForMail(app, (mail) => mail.to === email && mail.text.includes("/reset-password?token="))
  await ok(
    anonymous.accounts.resetPassword({
      payload: { token: resetTokenOf(resetMail), email, password: "Reset-Pass-2026-x", password_confirmation: "Reset-Pass-2026-x" }
    })
  )
  const login = await ok(anonymous.accounts.login({ payload: { email, password: "Reset-Pass-2026-x" } }))
  expect(login.user.id).toBe(registered.user.id)
})

test("two-factor sign-in: set up, confirm, sign in with a code, disable [D97]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const setup = await ok(me.accounts.setUpTwoFactor())
  expect(setup.otpauth_url.startsWith("otpauth://totp/")).toBe(true)
  const code = (offsetMs = 0) => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.secret), timestamp: app.clock.get().getTime() + offsetMs })
  const enabled = await ok(me.accounts.confirmTwoFactor({ payload: { code: code() } }))
  expect(enabled.data.recovery_codes.length).toBeGreaterThanOrEqual(8)

  app.clock.advance(61_000)
  const anonymous = await typedClient(app, { headers: anyAddress() })
  const withoutCode = await fails(anonymous.accounts.login({ payload: { email: user.email, password: user.password } }))
  expect(withoutCode._tag).not.toBe("ParseError")
  const login = await ok(anonymous.accounts.login({ payload: { email: user.email, password: user.password, otp: code() } }))
  expect(login.user.id).toBe(user.id)

  app.clock.advance(61_000)
  expect(typeof (await ok(me.accounts.disableTwoFactor({ payload: { password: user.password, code: code() } })))).toBe("string")
  app.clock.advance(61_000)
  expect((await ok(anonymous.accounts.login({ payload: { email: user.email, password: user.password } }))).user.id).toBe(user.id)
})

test("account deletion with the password: the token stops working [D25]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  expect(typeof (await ok(me.accounts.deleteAccount({ payload: { password: user.password } })))).toBe("string")
  expect((await fails(me.accounts.user()))._tag).toBe("Unauthenticated")
})
