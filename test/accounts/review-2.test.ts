import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Secret, TOTP } from "otpauth"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { anyAddress, freshEmail, PASSWORD, register, settle, waitForMail } from "./helpers.ts"

// Issue 23, the second outside review (rev. 3): the accounts items, one describe per item, each
// test through the HTTP API and failing on the code before it ([D114], [D115], [D117]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const FORBIDDEN = { success: false, message: "Forbidden." }
const TOO_MANY = { success: false, message: "Too Many Attempts." }
const TWO_FACTOR_REQUIRED = { success: false, message: "Two-factor authentication required." }

/** the code of `secret` for `at`'s clock, `offsetMs` away */
const codeAt = (target: TestApp, secret: string, offsetMs = 0) =>
  TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(secret), timestamp: target.clock.get().getTime() + offsetMs })

type Scopes = Parameters<TypedClient["accounts"]["createApiKey"]>[0]["payload"]["scopes"]

const newKey = async (target: TestApp, token: string, scopes: Scopes) => {
  const owner = await typedClient(target, { token })
  return (await ok(owner.accounts.createApiKey({ payload: { name: "automation", scopes } }))).key
}

/** two-factor sign-in turned on in the session of `token`: the secret, and the code that confirmed it */
const enrol = async (target: TestApp, token: string) => {
  const me = await typedClient(target, { token })
  const secret = (await ok(me.accounts.setUpTwoFactor())).secret
  const code = codeAt(target, secret)
  await ok(me.accounts.confirmTwoFactor({ payload: { code } }))
  return { secret, code }
}

const login = (target: TestApp, email: string, password: string, extra: Record<string, unknown> = {}) =>
  target.post("/v1/auth/login", { headers: anyAddress(), body: { email, password, ...extra } })

/** a login through the typed client (a 200), from an address of its own: the new token */
const signIn = async (target: TestApp, email: string, password: string, extra: { otp?: string } = {}) => {
  const anonymous = await typedClient(target, { headers: anyAddress() })
  return (await ok(anonymous.accounts.login({ payload: { email, password, ...extra } }))).token
}

/** the typed client of one token (or API key) */
const as = (token: string, target: TestApp = app) => typedClient(target, { token })

describe("item 1 [D114]: an API key never changes the e-mail", () => {
  test("PUT /v1/account/profile with `email` through a `write` key: 403 Forbidden., nothing changed, no mail; `name` alone stays a write", async () => {
    const user = await register(app)
    const key = await newKey(app, user.token, ["read", "write"])
    const attacker = freshEmail("attacker")
    const mailsBefore = app.outbox.length

    const refused = await app.put("/v1/account/profile", { token: key, body: { email: attacker } })
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual(FORBIDDEN)
    const both = await app.put("/v1/account/profile", { token: key, body: { name: "Mallory", email: attacker } })
    expect(both.status).toBe(403)
    // even the current address: a key does not send `email` at all
    expect((await app.put("/v1/account/profile", { token: key, body: { email: user.email } })).status).toBe(403)

    const person = await as(user.token)
    const me = await ok(person.accounts.user())
    expect(me.email).toBe(user.email)
    expect(me.name).toBe("Ada Lovelace")
    await settle()
    expect(app.outbox.slice(mailsBefore).filter((m) => m.to === attacker)).toEqual([])
    // so forgot-password cannot reach the attacker's mailbox
    const anonymous = await typedClient(app, { headers: anyAddress() })
    await ok(anonymous.accounts.forgotPassword({ payload: { email: attacker } }))
    await settle()
    expect(app.outbox.filter((m) => m.to === attacker)).toEqual([])

    const viaKey = await as(key)
    const renamed = await ok(viaKey.accounts.updateProfile({ payload: { name: "Ada King" } }))
    expect<unknown>(renamed.data).toEqual({ id: user.id, name: "Ada King", email: user.email })
    // the person, with a session, still changes it
    const own = freshEmail("own")
    expect((await ok(person.accounts.updateProfile({ payload: { email: own } }))).data.email).toBe(own)
  })
})

describe("items 3 and 6 [D115]: a second factor that means something", () => {
  test("with ADMIN_REQUIRE_2FA a password-only token stays 403 after enrolling in that session (and so do its keys); a login with the code passes", async () => {
    const strict = await makeTestApp({ config: { adminRequire2fa: true }, reset: false })
    try {
      strict.clock.set(app.clock.get())
      const admin = await strict.createUser({ role: "admin" })
      const passwordOnly = await signIn(strict, admin.email, admin.password)
      expect((await strict.get("/v1/admin/users", { token: passwordOnly })).body).toEqual(TWO_FACTOR_REQUIRED)

      const { secret } = await enrol(strict, passwordOnly)
      const enrolled = await as(passwordOnly, strict)
      expect((await ok(enrolled.accounts.user())).two_factor).toBe(true)
      const still = await strict.get("/v1/admin/users", { token: passwordOnly })
      expect(still.status).toBe(403)
      expect(still.body).toEqual(TWO_FACTOR_REQUIRED)
      // a key made in that session is no stronger than it
      const weakKey = await newKey(strict, passwordOnly, ["admin:read"])
      expect((await strict.get("/v1/admin/users", { token: weakKey })).body).toEqual(TWO_FACTOR_REQUIRED)
      // the tokens issued before (createUser's) are password-only too
      expect((await strict.get("/v1/admin/users", { token: admin.token })).status).toBe(403)

      strict.clock.advance(61_000)
      const strong = await signIn(strict, admin.email, admin.password, { otp: codeAt(strict, secret) })
      const viaStrong = await as(strong, strict)
      await ok(viaStrong.accountsAdmin.listUsers({ urlParams: {} }))
      const strongKey = await newKey(strict, strong, ["admin:read"])
      const viaStrongKey = await as(strongKey, strict)
      await ok(viaStrongKey.accountsAdmin.listUsers({ urlParams: {} }))

      // turning 2FA off leaves no token that passes the rule
      await ok(viaStrong.accounts.disableTwoFactor({ payload: { password: admin.password, code: codeAt(strict, secret, 30_000) } }))
      expect((await strict.get("/v1/admin/users", { token: strong })).body).toEqual(TWO_FACTOR_REQUIRED)
    } finally {
      await strict.dispose()
    }
  })

  test("the code that confirmed 2FA is spent: the same code at login is 422 errors.otp; the next step's code signs in", async () => {
    const user = await register(app)
    const { code, secret } = await enrol(app, user.token)
    const replay = await login(app, user.email, user.password, { otp: code })
    expect(replay.status).toBe(422)
    expect(replay.body.errors).toEqual({ otp: ["The two-factor code is invalid."] })
    app.clock.advance(30_000)
    expect(await signIn(app, user.email, user.password, { otp: codeAt(app, secret) })).toMatch(/^[1-9][0-9]*\|/)
  })
})

describe("item 9 [D117]: e-mail domains follow host-name rules", () => {
  const INVALID = ["The email field must be a valid email address."]
  const refused = [
    "bob1@example.test.",
    "a@example..test",
    "a@.example.test",
    "a@-example.test",
    "a@example-.test",
    "a@exa_mple.test",
    "a@example.t",
    "a@example.123",
    "a@example.te5t",
    `a@${"l".repeat(64)}.test`
  ]
  const accepted = ["a@example.test", "a@xn--bcher-kva.example", "a@sub-1.example.co", "a@x.xn--p1ai", `a@${"l".repeat(63)}.test`]

  test.each(refused)("%s is 422 on register, profile and forgot-password (the shared field rule)", async (address) => {
    const reg = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "Bob", email: address, password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(reg.status).toBe(422)
    expect(reg.body.errors.email).toEqual(INVALID)
    const user = await app.createUser()
    const profile = await app.put("/v1/account/profile", { token: user.token, body: { email: address } })
    expect(profile.status).toBe(422)
    expect(profile.body.errors).toEqual({ email: INVALID })
    const forgot = await app.post("/v1/auth/forgot-password", { headers: anyAddress(), body: { email: address } })
    expect(forgot.status).toBe(422)
    expect(forgot.body.errors).toEqual({ email: INVALID })
  })

  test("host names that follow the rules still register (an `xn--` label, digits and hyphens inside labels)", async () => {
    for (const address of accepted) {
      const local = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
      // a 201: the typed client decodes the declared status only
      const anonymous = await typedClient(app, { headers: anyAddress() })
      const email = address.replace(/^a@/, `${local}@`)
      const registered = await ok(anonymous.accounts.register({ payload: { name: "Bob", email, password: PASSWORD, password_confirmation: PASSWORD } }))
      expect(registered.user.email).toBe(email)
    }
  })
})

describe("item 7 [D117]: a password checked with a session is under the login limit's rule", () => {
  test("DELETE /v1/account: 5 wrong passwords a minute per user, then 429 even with the right one (the limit runs before the handler); the next minute it works", async () => {
    const user = await register(app)
    for (let i = 0; i < 5; i++) {
      const wrong = await app.del("/v1/account", { token: user.token, headers: anyAddress(), body: { password: `guess-${i}` } })
      expect(wrong.status).toBe(422)
      expect(wrong.body.errors).toEqual({ password: ["The password is incorrect."] })
    }
    const blocked = await app.del("/v1/account", { token: user.token, headers: anyAddress(), body: { password: PASSWORD } })
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual(TOO_MANY)
    expect(blocked.headers.get("retry-after")).not.toBeNull()
    const me = await as(user.token)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    app.clock.advance(61_000)
    await ok(me.accounts.deleteAccount({ payload: { password: PASSWORD } }))
  })

  test("PUT /v1/account/password shares the counter: 3 wrong deletes and 2 wrong changes, then 429 on both routes", async () => {
    const user = await register(app)
    const change = (current: string) =>
      app.put("/v1/account/password", {
        token: user.token,
        body: { current_password: current, password: "An0ther-Long-Pass", password_confirmation: "An0ther-Long-Pass" }
      })
    for (let i = 0; i < 3; i++) expect((await app.del("/v1/account", { token: user.token, body: { password: `guess-${i}` } })).status).toBe(422)
    for (let i = 0; i < 2; i++) expect((await change(`guess-${i}`)).status).toBe(422)
    const blocked = await change(PASSWORD)
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual(TOO_MANY)
    expect((await app.del("/v1/account", { token: user.token, body: { password: PASSWORD } })).status).toBe(429)
    // another user's counter is its own
    const other = await register(app)
    expect((await app.del("/v1/account", { token: other.token, body: { password: "nope" } })).status).toBe(422)
    app.clock.advance(61_000)
    const me = await as(user.token)
    await ok(me.accounts.changePassword({ payload: { current_password: PASSWORD, password: "An0ther-Long-Pass", password_confirmation: "An0ther-Long-Pass" } }))
  })
})

describe("item 8 [D117]: the HTML pages count against their API routes' per-address limits", () => {
  test("GET /verify-email and POST /v1/auth/verify-email share 6 a minute per address", async () => {
    const address = anyAddress()
    for (let i = 0; i < 3; i++) {
      const page = await app.get(`/verify-email?token=bogus${i}`, { headers: { ...address, accept: "text/html" } })
      expect(page.status).toBe(422)
      expect(page.headers.get("content-type")).toContain("text/html")
    }
    for (let i = 0; i < 3; i++) {
      expect((await app.post("/v1/auth/verify-email", { headers: address, body: { token: `bogus-api${i}` } })).status).toBe(422)
    }
    const page = await app.get("/verify-email?token=bogus-last", { headers: { ...address, accept: "text/html" } })
    expect(page.status).toBe(429)
    expect(page.headers.get("retry-after")).not.toBeNull()
    expect((await app.post("/v1/auth/verify-email", { headers: address, body: { token: "bogus-more" } })).status).toBe(429)
    // another address is not held back
    expect((await app.get("/verify-email?token=bogus", { headers: anyAddress() })).status).toBe(422)
  })

  test("POST /reset-password (the form) and POST /v1/auth/reset-password share 6 a minute per address", async () => {
    const address = anyAddress()
    const form = (token: string) =>
      app.request("POST", "/reset-password", {
        headers: { ...address, accept: "text/html", "content-type": "application/x-www-form-urlencoded" },
        raw: new URLSearchParams({ token, email: "someone@example.test", password: PASSWORD, password_confirmation: PASSWORD }).toString()
      })
    for (let i = 0; i < 4; i++) {
      const res = await form(`guess${i}`)
      expect(res.status).toBe(422)
      expect(res.text).toContain("This password reset link is invalid")
    }
    for (let i = 0; i < 2; i++) {
      const api = await app.post("/v1/auth/reset-password", {
        headers: address,
        body: { token: `api${i}`, email: "someone@example.test", password: PASSWORD, password_confirmation: PASSWORD }
      })
      expect(api.status).toBe(422)
    }
    expect((await form("guess-last")).status).toBe(429)
    const api = await app.post("/v1/auth/reset-password", {
      headers: address,
      body: { token: "api-last", email: "someone@example.test", password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(api.status).toBe(429)
    // issue 34 ([D117] made precise): the page itself is counted too, GET included
    expect((await app.get("/reset-password?token=x&email=a%40example.test", { headers: address })).status).toBe(429)
  })
})

describe("item 2 [D114]: what a reset, a password change and logout-all revoke, and the mail that says so", () => {
  /** a user with two sessions and one API key */
  const equipped = async () => {
    const user = await register(app)
    const second = await signIn(app, user.email, user.password)
    const key = await newKey(app, user.token, ["read", "write"])
    const viaKey = await as(key)
    expect<number>((await ok(viaKey.accounts.user())).id).toBe(user.id)
    return { ...user, second, key }
  }
  const status = async (token: string) => (await app.get("/v1/user", { token })).status
  /** the credential still reads the user (a 200, through the typed client) */
  const alive = async (token: string) => {
    const client = await as(token)
    return (await ok(client.accounts.user())).id
  }

  test("a password reset revokes every session and every API key", async () => {
    const user = await equipped()
    const asker = await typedClient(app, { headers: anyAddress() })
    await ok(asker.accounts.forgotPassword({ payload: { email: user.email } }))
    const resetMail = await waitForMail(app, (m) => m.to === user.email && m.subject === "Reset your password")
    const token = /\/reset-password\?token=([A-Za-z0-9]+)&email=/.exec(resetMail.text)![1]!
    const resetter = await typedClient(app, { headers: anyAddress() })
    await ok(
      resetter.accounts.resetPassword({ payload: { token, email: user.email, password: "N3w-Long-Password", password_confirmation: "N3w-Long-Password" } })
    )
    expect(await status(user.token)).toBe(401)
    expect(await status(user.second)).toBe(401)
    expect(await status(user.key)).toBe(401)
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject === "Your password was reset")
    expect(mail.text).toContain("Revoked: every session (2 sessions), every API key (1 key)")
  })

  test("a password change revokes every other session and every API key; the caller's session stays", async () => {
    const user = await equipped()
    const me = await as(user.token)
    await ok(
      me.accounts.changePassword({ payload: { current_password: user.password, password: "N3w-Long-Password", password_confirmation: "N3w-Long-Password" } })
    )
    expect<number>(await alive(user.token)).toBe(user.id)
    expect(await status(user.second)).toBe(401)
    expect(await status(user.key)).toBe(401)
    expect(await ok(me.accounts.listApiKeys())).toEqual([])
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject === "Your password was changed")
    expect(mail.text).toContain("Revoked: every other session (1 session) and every API key (1 key)")
  })

  test("logout-all revokes every session, the caller's too; the API keys stay, and the mail says both", async () => {
    const user = await equipped()
    const me = await as(user.token)
    await ok(me.accounts.logoutAll())
    expect(await status(user.token)).toBe(401)
    expect(await status(user.second)).toBe(401)
    expect<number>(await alive(user.key)).toBe(user.id)
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject === "You were signed out everywhere")
    expect(mail.text).toContain("Revoked: every session (2 sessions).")
    expect(mail.text).toContain("Not revoked: your API keys (1 key)")
  })
})

describe("item 5 [D117]: e-mail changes are limited, and a name in a mail is one line", () => {
  test("10 parallel changes of one user to 10 new addresses: exactly 3 pass (3 verification mails), 7 are 429; an hour later again", async () => {
    const user = await register(app)
    const targets = Array.from({ length: 10 }, () => freshEmail("victim"))
    const answers = await Promise.all(targets.map((email) => app.put("/v1/account/profile", { token: user.token, body: { email } })))
    expect(answers.filter((r) => r.status === 200).length).toBe(3)
    const refused = answers.filter((r) => r.status === 429)
    expect(refused.length).toBe(7)
    expect(refused[0]!.body).toEqual(TOO_MANY)
    await settle()
    await Bun.sleep(100)
    // a verification to each of the 3 new addresses, a change notice to the 2 that were left
    const toTargets = app.outbox.filter((m) => targets.includes(m.to))
    expect(toTargets.filter((m) => m.subject === "Verify your e-mail address").length).toBe(3)
    expect(toTargets.length).toBe(5)
    // a name-only change is no e-mail change
    const me = await as(user.token)
    expect((await ok(me.accounts.updateProfile({ payload: { name: "Still Me" } }))).data.name).toBe("Still Me")
    app.clock.advance(3_600_000 + 1_000)
    const later = freshEmail("later")
    expect((await ok(me.accounts.updateProfile({ payload: { email: later } }))).data.email).toBe(later)
  })

  test("3 a day to any one new address, whichever users change to it; the next day again", async () => {
    const target = freshEmail("bombed")
    const users = await Promise.all([register(app), register(app), register(app), register(app)])
    for (const user of users.slice(0, 3)) {
      const changer = await as(user.token)
      expect((await ok(changer.accounts.updateProfile({ payload: { email: target } }))).data.email).toBe(target)
      // and away again, so the next one can take it
      await ok(changer.accounts.updateProfile({ payload: { email: freshEmail("away") } }))
    }
    const fourth = await app.put("/v1/account/profile", { token: users[3]!.token, body: { email: target } })
    expect(fourth.status).toBe(429)
    expect(fourth.body).toEqual(TOO_MANY)
    // another address is not held back for that user
    const fourthUser = await as(users[3]!.token)
    await ok(fourthUser.accounts.updateProfile({ payload: { email: freshEmail("other") } }))
    app.clock.advance(24 * 3_600_000 + 1_000)
    expect((await ok(fourthUser.accounts.updateProfile({ payload: { email: target } }))).data.email).toBe(target)
  })

  test("line breaks in the name become spaces in every mail that names the user", async () => {
    const name = "Eve\r\nClick https://evil.example/login to keep your account\nThe Security Team\u2028PS"
    const user = await register(app, { name })
    const target = freshEmail("new")
    const me = await as(user.token)
    await ok(me.accounts.updateProfile({ payload: { email: target } }))
    const verification = await waitForMail(app, (m) => m.to === target)
    const notice = await waitForMail(app, (m) => m.to === user.email && m.subject === "Your e-mail address was changed")
    const oneLine = "Hello Eve Click https://evil.example/login to keep your account The Security Team PS,"
    for (const mail of [verification, notice]) {
      expect(mail.text.split("\n")[0]).toBe(oneLine)
      expect(mail.text).not.toContain("\nClick https://evil")
    }
    // a mail from a template (the security mails of [D114]) too
    await ok(me.accounts.logoutAll())
    const signedOut = await waitForMail(app, (m) => m.to === target && m.subject === "You were signed out everywhere")
    expect(signedOut.text.split("\n")[0]).toBe(oneLine)
    expect(signedOut.html).not.toMatch(/Eve[\r\n\u2028]/)
  })
})

describe("item 15: a failed sign-in does the same work whether or not the address is registered", () => {
  test("a wrong password and an unknown address each append one failed sign-in to the audit log (the unknown one naming no one); both 401", async () => {
    const admin = await app.createUser({ role: "admin" })
    const staff = await as(admin.token)
    const failures = async () => (await ok(staff.auditAdmin.search({ urlParams: { action: "sign_in_failed" } }))).meta.total
    const user = await register(app)
    const start = await failures()
    const wrong = await login(app, user.email, "not-the-password")
    expect(wrong.status).toBe(401)
    expect(await failures()).toBe(start + 1)
    const unknown = await login(app, freshEmail("nobody"), "not-the-password")
    expect(unknown.status).toBe(401)
    expect(unknown.body).toEqual(wrong.body)
    expect(await failures()).toBe(start + 2)
    const newest = (await ok(staff.auditAdmin.search({ urlParams: { action: "sign_in_failed" } }))).data[0]
    expect(newest).toMatchObject({ action: "sign_in_failed", actor_id: null, actor_kind: "none", subject_id: null, resource: null })
  })
})
