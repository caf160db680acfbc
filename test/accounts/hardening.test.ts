import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer, Logger, LogLevel, Option, Redacted } from "effect"
import { AccountsStartup } from "../../src/accounts/Startup.ts"
import { Users } from "../../src/accounts/Users.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { anyAddress, freshEmail, PASSWORD, register, resetTokenOf, verifyTokenOf, waitForMail } from "./helpers.ts"

// Issue 14 in the accounts room: [D1] start-up, [D13] look-alike e-mails, [D20] re-hash at login,
// [D21] the last admin, [D23] no hash before the token, [D24] the old address told, [D26] page
// headers, [D30] the per-address limits of rev. 2.
const ADMIN_EMAIL = "bootstrap@example.com"
const ADMIN_PASSWORD = "Admin-Str0ng-Secret"

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({
    config: { adminEmail: Option.some(ADMIN_EMAIL), adminPassword: Option.some(Redacted.make(ADMIN_PASSWORD)) }
  })
})
afterAll(() => app.dispose())

const login = (email: string, password: string) => app.post("/v1/auth/login", { body: { email, password }, headers: anyAddress() })

/** the typed client from a client address of its own ([D30]), signed in with `token` when given */
const client = (token?: string) => typedClient(app, { headers: anyAddress(), ...(token === undefined ? {} : { token }) })

/** a typed sign-in that must succeed: the user it answers */
const signIn = async (email: string, password: string) => {
  const anonymous = await client()
  return (await ok(anonymous.accounts.login({ payload: { email, password } }))).user
}

/** counts the argon2 hashes made while `run` runs */
const countingHashes = async (run: () => Promise<void>) => {
  const password = Bun.password as { hash: typeof Bun.password.hash }
  const original = password.hash
  let hashes = 0
  password.hash = (...args: Parameters<typeof Bun.password.hash>) => {
    hashes++
    return original(...args)
  }
  try {
    await run()
  } finally {
    password.hash = original
  }
  return hashes
}

describe("start-up never changes an existing account [D1] (rev. 2)", () => {
  test("a user holding ADMIN_EMAIL stays a user, unverified, with its password; one warning line says so", async () => {
    const user = await register(app, { email: ADMIN_EMAIL })
    const lines: Array<{ level: string; message: string }> = []
    const capture = Logger.make(({ logLevel, message }) => {
      lines.push({ level: logLevel.label, message: String(Array.isArray(message) ? message.join(" ") : message) })
    })
    await app.run(
      Effect.scoped(Layer.build(AccountsStartup)).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
        Logger.withMinimumLogLevel(LogLevel.Debug)
      )
    )
    const session = await client(user.token)
    const me = await ok(session.accounts.user())
    expect(me).toMatchObject({ email: ADMIN_EMAIL, role: "user", status: 1, email_verified_at: null })
    expect((await login(ADMIN_EMAIL, ADMIN_PASSWORD)).status).toBe(401)
    expect<number>((await signIn(ADMIN_EMAIL, PASSWORD)).id).toBe(user.id)
    expect(lines).toHaveLength(1)
    expect(lines[0]!.level).toBe("WARN")
    expect(lines[0]!.message).toContain(ADMIN_EMAIL)
    expect(lines[0]!.message).toContain("not an admin")
    await app.sql`delete from users where email = ${ADMIN_EMAIL}`
  })
})

describe("no argon2 work before the cheap checks [D23] (rev. 2)", () => {
  test("reset-password with a bad token hashes nothing; with a good one it resets", async () => {
    const user = await register(app)
    const hashes = await countingHashes(async () => {
      const res = await app.post("/v1/auth/reset-password", {
        headers: anyAddress(),
        body: { token: "x".repeat(64), email: user.email, password: "Brand-New-Passw0rd", password_confirmation: "Brand-New-Passw0rd" }
      })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["token"])
    })
    expect(hashes).toBe(0)
    const anonymous = await client()
    await ok(anonymous.accounts.forgotPassword({ payload: { email: user.email } }))
    const token = resetTokenOf(await waitForMail(app, (m) => m.to === user.email && m.subject.includes("Reset")))
    const reset = await client()
    await ok(
      reset.accounts.resetPassword({ payload: { token, email: user.email, password: "Brand-New-Passw0rd", password_confirmation: "Brand-New-Passw0rd" } })
    )
    expect<number>((await signIn(user.email, "Brand-New-Passw0rd")).id).toBe(user.id)
  })

  test("register with a taken e-mail hashes nothing", async () => {
    const user = await register(app)
    const hashes = await countingHashes(async () => {
      const res = await app.post("/v1/auth/register", {
        headers: anyAddress(),
        body: { name: "Again", email: user.email.toUpperCase(), password: PASSWORD, password_confirmation: PASSWORD }
      })
      expect(res.status).toBe(422)
      expect(res.body.errors).toEqual({ email: ["The email has already been taken."] })
    })
    expect(hashes).toBe(0)
  })
})

describe("per-address limits of register, reset-password and verify-email [D30] (rev. 2)", () => {
  const cases = [
    {
      path: "/v1/auth/register",
      limit: 10,
      body: () => ({ name: "Limit", email: freshEmail("limit"), password: PASSWORD, password_confirmation: PASSWORD }),
      status: 201
    },
    {
      path: "/v1/auth/reset-password",
      limit: 6,
      body: () => ({ token: "y".repeat(64), email: freshEmail(), password: PASSWORD, password_confirmation: PASSWORD }),
      status: 422
    },
    { path: "/v1/auth/verify-email", limit: 6, body: () => ({ token: "z".repeat(64) }), status: 422 }
  ] as const

  for (const [i, c] of cases.entries()) {
    test(`${c.path}: ${c.limit} a minute per address, with the headers; then 429 with Retry-After`, async () => {
      const ip = { "x-forwarded-for": `10.90.${i}.1` }
      for (let n = 0; n < c.limit; n++) {
        const res = await app.post(c.path, { headers: ip, body: c.body() })
        expect(res.status).toBe(c.status)
        expect(res.headers.get("x-ratelimit-limit")).toBe(String(c.limit))
        expect(res.headers.get("x-ratelimit-remaining")).toBe(String(c.limit - 1 - n))
      }
      const blocked = await app.post(c.path, { headers: ip, body: c.body() })
      expect(blocked.status).toBe(429)
      expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
      expect(blocked.headers.get("retry-after")).toBe("60")
      expect(blocked.headers.get("x-ratelimit-remaining")).toBe("0")
      // invalid requests count too, and another address is not affected
      const elsewhere = await app.post(c.path, { headers: { "x-forwarded-for": `10.90.${i}.2` }, body: {} })
      expect(elsewhere.status).toBe(422)
      app.clock.advance(61_000)
      expect((await app.post(c.path, { headers: ip, body: c.body() })).status).toBe(c.status)
    }, 30_000)
  }

  test("they count against their own limit, not the general one", async () => {
    const strict = await makeTestApp({ reset: false, config: { generalRateLimit: 2 } })
    try {
      const ip = { "x-forwarded-for": "10.91.0.1" }
      for (let n = 0; n < 4; n++) {
        expect((await strict.post("/v1/auth/verify-email", { headers: ip, body: { token: "q".repeat(64) } })).status).toBe(422)
        expect((await strict.post("/v1/auth/reset-password", { headers: ip, body: {} })).status).toBe(422)
        expect((await strict.post("/v1/auth/register", { headers: ip, body: {} })).status).toBe(422)
      }
    } finally {
      await strict.dispose()
    }
  })
})

describe("a hash of other argon2 parameters is renewed at login [D20] (rev. 2)", () => {
  test("the user logs in with the old hash, which then carries the current parameters", async () => {
    const email = freshEmail("legacy")
    const legacy = await Bun.password.hash(PASSWORD, { algorithm: "argon2id", memoryCost: 8192, timeCost: 3 })
    await app.run(
      Effect.gen(function* () {
        const users = yield* Users
        yield* users.insert({ name: "Legacy", email, passwordHash: legacy, now: new Date() })
      }).pipe(Effect.provide(Users.Default))
    )
    const stored = async () => app.run(Effect.flatMap(Users, (users) => users.findByEmail(email)).pipe(Effect.provide(Users.Default)))
    expect(Option.getOrThrow(await stored()).password_hash).toStartWith("$argon2id$v=19$m=8192,t=3,")

    expect((await login(email, "Wrong-passw0rd-x")).status).toBe(401)
    // a failed login changes nothing
    expect(Option.getOrThrow(await stored()).password_hash).toBe(legacy)

    expect((await signIn(email, PASSWORD)).email).toBe(email)
    const renewed = Option.getOrThrow(await stored()).password_hash
    expect(renewed).toStartWith("$argon2id$v=19$m=19456,t=2,")
    expect(await Bun.password.verify(PASSWORD, renewed)).toBe(true)
    expect((await signIn(email, PASSWORD)).email).toBe(email)
    expect(Option.getOrThrow(await stored()).password_hash).toBe(renewed)
  })
})

describe("look-alike e-mails [D13] (rev. 2)", () => {
  const invalid = {
    "zero-width space": "ad\u200bmin@example.com",
    "fullwidth letters": "\uff41dmin@example.com",
    "Cyrillic letter": "\u0430dmin@example.com",
    "decomposed accent": "jose\u0301@example.com",
    "Kelvin sign (lower-cases to k)": "\u212aelvin@example.com",
    "non-breaking space around it": "\u00a0admin@example.com",
    "Unicode domain": "user@b\u00fccher.de",
    "control character": "ad\u0001min@example.com"
  }

  for (const [name, email] of Object.entries(invalid)) {
    test(`${name}: 422 The email field must be a valid email address.`, async () => {
      const res = await app.post("/v1/auth/register", {
        headers: anyAddress(),
        body: { name: "Look Alike", email, password: PASSWORD, password_confirmation: PASSWORD }
      })
      expect(res.status).toBe(422)
      expect(res.body.errors).toEqual({ email: ["The email field must be a valid email address."] })
    })
  }

  test("an internationalised domain in its xn-- form is accepted", async () => {
    const user = await register(app, { email: `user${Date.now()}@xn--bcher-kva.de` })
    const me = await client(user.token)
    expect((await ok(me.accounts.user())).email).toBe(user.email)
  })

  test("the profile e-mail follows the same rule", async () => {
    const user = await register(app)
    const res = await app.put("/v1/account/profile", { token: user.token, body: { email: "\u0430dmin@example.com" } })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ email: ["The email field must be a valid email address."] })
  })
})

describe("the last active admin [D21] (rev. 2)", () => {
  const LAST = "The last admin cannot be demoted or disabled."

  test("cannot demote or disable itself; another admin makes it possible", async () => {
    await app.sql`delete from users where role = 'admin'`
    const admin = await app.createUser({ role: "admin" })
    const demote = await app.put(`/v1/admin/users/${admin.id}`, { token: admin.token, body: { role: "user" } })
    expect(demote.status).toBe(422)
    expect(demote.body).toEqual({ success: false, message: "The given data was invalid.", errors: { role: [LAST] } })
    const disable = await app.put(`/v1/admin/users/${admin.id}`, { token: admin.token, body: { status: 0 } })
    expect(disable.status).toBe(422)
    expect(disable.body.errors).toEqual({ status: [LAST] })
    const both = await app.put(`/v1/admin/users/${admin.id}`, { token: admin.token, body: { status: 0, role: "user" } })
    expect(both.body.errors).toEqual({ role: [LAST], status: [LAST] })
    // a disabled admin is not an active one
    const dormant = await app.createUser({ role: "admin", status: 0 })
    expect((await app.put(`/v1/admin/users/${admin.id}`, { token: admin.token, body: { role: "user" } })).status).toBe(422)
    const first = await typedClient(app, { token: admin.token })
    expect((await ok(first.accountsAdmin.updateUser({ path: { user: dormant.id }, payload: { role: "user" } }))).role).toBe("user")
    // with a second active admin, the first may step down
    const second = await app.createUser({ role: "admin" })
    const stepDown = await ok(first.accountsAdmin.updateUser({ path: { user: admin.id }, payload: { role: "user" } }))
    expect(stepDown.role).toBe("user")
    // and the second is now the last one
    const last = await app.put(`/v1/admin/users/${second.id}`, { token: second.token, body: { status: 0 } })
    expect(last.status).toBe(422)
    expect(last.body.errors).toEqual({ status: [LAST] })
    // promoting and enabling are never refused
    const secondClient = await typedClient(app, { token: second.token })
    expect(await ok(secondClient.accountsAdmin.updateUser({ path: { user: second.id }, payload: { role: "admin", status: 1 } }))).toMatchObject({
      role: "admin",
      status: 1
    })
  })

  test("two admins demoting each other at once leave one admin", async () => {
    for (let round = 0; round < 5; round++) {
      await app.sql`delete from users where role = 'admin'`
      const a = await app.createUser({ role: "admin" })
      const b = await app.createUser({ role: "admin" })
      const [ab, ba] = await Promise.all([
        app.put(`/v1/admin/users/${b.id}`, { token: a.token, body: round % 2 === 0 ? { role: "user" } : { status: 0 } }),
        app.put(`/v1/admin/users/${a.id}`, { token: b.token, body: round % 2 === 0 ? { role: "user" } : { status: 0 } })
      ])
      expect([ab!.status, ba!.status].sort()).toEqual([200, 422])
      const [left] = await app.sql<{ n: number }>`select count(*)::int as n from users where role = 'admin' and status = 1`
      expect(left!.n).toBe(1)
    }
  })
})

describe("an e-mail change tells the old address [D24] (rev. 2)", () => {
  test("the old address gets a notice naming the new one; the new one gets the verification", async () => {
    const user = await register(app)
    await waitForMail(app, (m) => m.to === user.email)
    const next = freshEmail("moved")
    const me = await client(user.token)
    await ok(me.accounts.updateProfile({ payload: { email: next } }))
    const notice = await waitForMail(app, (m) => m.to === user.email && m.subject === "Your e-mail address was changed")
    expect(notice.text).toContain(next)
    expect(notice.text).not.toMatch(/token=/)
    verifyTokenOf(await waitForMail(app, (m) => m.to === next))
    // no notice when the e-mail stays the same
    const before = app.outbox.length
    expect((await ok(me.accounts.updateProfile({ payload: { email: next, name: "Same Mail" } }))).data.name).toBe("Same Mail")
    await Bun.sleep(50)
    expect(app.outbox.slice(before)).toEqual([])
  })
})

describe("every HTML page sends its security headers [D26] (rev. 2)", () => {
  const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
  const expectHeaders = (res: { status: number; headers: Headers }) => {
    expect(res.headers.get("content-type")).toStartWith("text/html")
    expect(res.headers.get("content-security-policy")).toBe(CSP)
    expect(res.headers.get("x-content-type-options")).toBe("nosniff")
    expect(res.headers.get("referrer-policy")).toBe("no-referrer")
  }

  test("the verification page, whatever the outcome", async () => {
    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const ok = await app.get(`/verify-email?token=${token}`)
    expect(ok.status).toBe(200)
    expectHeaders(ok)
    const bad = await app.get("/verify-email?token=nope")
    expect(bad.status).toBe(422)
    expectHeaders(bad)
    expectHeaders(await app.get("/verify-email"))
  })

  test("the reset page and its form post", async () => {
    const page = await app.get("/reset-password?token=abc&email=a%40example.com")
    expect(page.status).toBe(200)
    expectHeaders(page)
    expectHeaders(await app.get("/reset-password"))
    const form = (fields: Record<string, string>) =>
      app.post("/reset-password", {
        raw: new URLSearchParams(fields).toString(),
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" }
      })
    const invalid = await form({ token: "abc", email: "a@example.com", password: "short", password_confirmation: "x" })
    expect(invalid.status).toBe(422)
    expectHeaders(invalid)
    const broken = await form({ token: "abc", email: "a@example.com", password: "Brand-New-Passw0rd", password_confirmation: "Brand-New-Passw0rd" })
    expect(broken.status).toBe(422)
    expectHeaders(broken)
  })

  test("the payment page", async () => {
    const res = await app.get("/pay/00000000-0000-4000-8000-000000000000?expires=1&signature=00")
    expect(res.status).toBe(403)
    expectHeaders(res)
  })
})

describe("the user answers are picks of one User schema (issue 13) [D21]", () => {
  test("register, login, user, profile and its update carry exactly their fields, never the hash", async () => {
    const email = freshEmail("shape")
    const registered = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "Shape", email, password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(Object.keys(registered.body.data.user).sort()).toEqual(["email", "id", "name"])
    const loggedIn = await login(email, PASSWORD)
    expect(Object.keys(loggedIn.body.data.user).sort()).toEqual(["email", "id", "name", "status"])
    const token = loggedIn.body.data.token as string
    const me = await app.get("/v1/user", { token })
    expect(Object.keys(me.body.data).sort()).toEqual(["created_at", "email", "email_verified_at", "id", "name", "role", "status", "two_factor"])
    const profile = await app.get("/v1/account/profile", { token })
    expect(Object.keys(profile.body.data).sort()).toEqual(["created_at", "email", "id", "locale", "name"])
    const updated = await app.put("/v1/account/profile", { token, body: { name: "Renamed" } })
    expect(updated.body).toEqual({ success: true, message: "Profile updated.", data: { id: me.body.data.id, name: "Renamed", email } })
    for (const res of [registered, loggedIn, me, profile, updated]) expect(res.text).not.toContain("argon2")
  })
})
