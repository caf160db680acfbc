import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Either, Option } from "effect"
import { Secret, TOTP } from "otpauth"
import { matchingStep, TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { AppKey } from "../../src/platform/Crypto.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { anyAddress, PASSWORD, register } from "./helpers.ts"

// [D97] two-factor sign-in: TOTP (RFC 6238, SHA-1, 6 digits, 30 s, ±1 step), recovery codes,
// the second factor of login, `two_factor` in GET /v1/user, ADMIN_REQUIRE_2FA.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const INVALID = "The two-factor code is invalid."
const STEP = 30_000

/** the code of `secret` for the app clock, `offsetMs` away */
const codeAt = (secret: string, offsetMs = 0) =>
  TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(secret), timestamp: app.clock.get().getTime() + offsetMs })

/** a six-digit code that is none of the secret's within the window */
const wrongCode = (secret: string) => {
  const near = new Set([-STEP, 0, STEP, 2 * STEP].map((offset) => codeAt(secret, offset)))
  for (let n = 0; ; n++) {
    const candidate = String(n).padStart(6, "0")
    if (!near.has(candidate)) return candidate
  }
}

/** past the login limit's window ([D30]: 5 a minute per e-mail), on a fresh step */
const nextMinute = () => app.clock.advance(61_000)

const login = (email: string, extra: Record<string, unknown> = {}, password = PASSWORD) =>
  app.post("/v1/auth/login", { headers: anyAddress(), body: { email, password, ...extra } })

/** a login through the typed client (a 200 with a token), from an address of its own */
const signIn = async (email: string, extra: { otp?: string; recovery_code?: string } = {}, password = PASSWORD) => {
  const anonymous = await typedClient(app, { headers: anyAddress() })
  return ok(anonymous.accounts.login({ payload: { email, password, ...extra } }))
}

/** the typed client of one token */
const as = (token: string) => typedClient(app, { token })

/** `two_factor` of GET /v1/user, through the typed client */
const twoFactorOf = async (token: string) => {
  const me = await as(token)
  return (await ok(me.accounts.user())).two_factor
}

/** a registered user with two-factor sign-in on: its secret and recovery codes */
const withTwoFactor = async () => {
  const user = await register(app)
  const me = await as(user.token)
  const secret = (await ok(me.accounts.setUpTwoFactor())).secret
  const confirmed = await ok(me.accounts.confirmTwoFactor({ payload: { code: codeAt(secret) } }))
  nextMinute()
  return { ...user, secret, recoveryCodes: confirmed.data.recovery_codes }
}

describe("the TOTP of otpauth is RFC 6238's", () => {
  // RFC 6238 Appendix B, SHA-1, secret "12345678901234567890" (ASCII)
  const vectors: ReadonlyArray<readonly [number, string]> = [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
    [20000000000, "65353130"]
  ]

  test.each(vectors)("at %d s the 8-digit code is %s", (seconds, expected) => {
    const secret = Secret.fromLatin1("12345678901234567890")
    expect(TOTP.generate({ secret, algorithm: "SHA1", digits: 8, period: 30, timestamp: seconds * 1000 })).toBe(expected)
  })

  test("the service's check accepts the 6-digit form (the last six digits) within one step, and names the step", () => {
    const base32 = Secret.fromLatin1("12345678901234567890").base32
    for (const [seconds, expected] of vectors) {
      const code = expected.slice(2)
      const step = Math.floor(seconds / 30)
      expect(matchingStep(base32, code, new Date(seconds * 1000))).toEqual(Option.some(step))
      expect(matchingStep(base32, code, new Date((seconds - 30) * 1000))).toEqual(Option.some(step))
      expect(matchingStep(base32, code, new Date((seconds + 30) * 1000))).toEqual(Option.some(step))
      expect(matchingStep(base32, code, new Date((seconds + 90) * 1000))).toEqual(Option.none())
    }
    expect(matchingStep(base32, "94287082", new Date(59_000))).toEqual(Option.none())
    expect(matchingStep(base32, "abcdef", new Date(59_000))).toEqual(Option.none())
  })
})

describe("setting it up and turning it on", () => {
  test("POST /v1/account/2fa: a base32 secret and its otpauth URL; not on until confirmed; sealed at rest", async () => {
    const user = await register(app)
    const res = await app.post("/v1/account/2fa", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(res.body.data).sort()).toEqual(["otpauth_url", "secret"])
    const secret = res.body.data.secret as string
    expect(secret).toMatch(/^[A-Z2-7]{32}$/)
    const url = new URL(res.body.data.otpauth_url as string)
    expect(url.protocol).toBe("otpauth:")
    expect(url.host).toBe("totp")
    expect(decodeURIComponent(url.pathname)).toBe(`/localhost:${user.email}`)
    expect(url.searchParams.get("secret")).toBe(secret)
    expect(url.searchParams.get("algorithm")).toBe("SHA1")
    expect(url.searchParams.get("digits")).toBe("6")
    expect(url.searchParams.get("period")).toBe("30")
    expect(await twoFactorOf(user.token)).toBe(false)

    const [row] = await app.sql<{ two_factor_secret: string | null; two_factor_pending: string }>`
      select two_factor_secret, two_factor_pending from users where id = ${user.id}`
    expect(row!.two_factor_secret).toBeNull()
    expect(row!.two_factor_pending).not.toContain(secret)
    expect(await app.run(Effect.map(AppKey, (key) => key.decrypt(row!.two_factor_pending)))).toBe(secret)
  })

  test("a second set-up replaces the pending secret: the first one's code no longer confirms", async () => {
    const user = await register(app)
    const me = await as(user.token)
    const first = (await ok(me.accounts.setUpTwoFactor())).secret
    const second = (await ok(me.accounts.setUpTwoFactor())).secret
    expect(second).not.toBe(first)
    if (codeAt(first) !== codeAt(second)) {
      const stale = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: codeAt(first) } })
      expect(stale.status).toBe(422)
      expect(stale.body.errors).toEqual({ code: [INVALID] })
    }
    expect((await ok(me.accounts.confirmTwoFactor({ payload: { code: codeAt(second) } }))).message).toBe("Two-factor authentication enabled.")
  })

  test("confirm: a wrong code is 422 errors.code; the right one turns it on and hands out 10 recovery codes once", async () => {
    const user = await register(app)
    const me = await as(user.token)
    const secret = (await ok(me.accounts.setUpTwoFactor())).secret
    const wrong = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: wrongCode(secret) } })
    expect(wrong.status).toBe(422)
    expect(wrong.body).toEqual({ success: false, message: "The given data was invalid.", errors: { code: [INVALID] } })
    expect(await twoFactorOf(user.token)).toBe(false)

    const missing = await app.post("/v1/account/2fa/confirm", { token: user.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({ code: ["The code field is required."] })

    const res = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: codeAt(secret) } })
    expect(res.status).toBe(200)
    expect(res.body.message).toBe("Two-factor authentication enabled.")
    expect(res.headers.get("cache-control")).toBe("no-store")
    const codes = res.body.data.recovery_codes as Array<string>
    expect(codes).toHaveLength(10)
    expect(new Set(codes).size).toBe(10)
    for (const code of codes) expect(code).toMatch(/^[a-z0-9]{5}-[a-z0-9]{5}$/)
    expect(await twoFactorOf(user.token)).toBe(true)

    // stored as hashes only; the secret sealed
    const [row] = await app.sql<{ two_factor_secret: string; recovery: string }>`
      select two_factor_secret, array_to_string(two_factor_recovery, ' ') as recovery from users where id = ${user.id}`
    expect(row!.two_factor_secret).not.toContain(secret)
    for (const code of codes) expect(row!.recovery).not.toContain(code)
    expect(row!.recovery.split(" ")).toHaveLength(10)

    // on already: no new set-up, no second confirmation
    const again = await app.post("/v1/account/2fa", { token: user.token })
    expect(again.status).toBe(422)
    expect(again.body).toEqual({
      success: false,
      message: "Two-factor authentication is already enabled.",
      errors: { two_factor: ["Two-factor authentication is already enabled."] }
    })
    const reconfirm = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: codeAt(secret) } })
    expect(reconfirm.status).toBe(422)
    expect(reconfirm.body.errors).toEqual({ two_factor: ["Two-factor authentication is already enabled."] })
  })

  test("confirm without a set-up is 422 errors.code; the routes need a token", async () => {
    const user = await register(app)
    const res = await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: "123456" } })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ code: [INVALID] })
    expect((await app.post("/v1/account/2fa")).status).toBe(401)
    expect((await app.post("/v1/account/2fa/confirm", { body: { code: "123456" } })).status).toBe(401)
    expect((await app.del("/v1/account/2fa", { body: { password: PASSWORD, code: "123456" } })).status).toBe(401)
  })
})

describe("through the typed client", () => {
  test("set-up, confirm and login decode through the contract's schemas; a wrong code is a ValidationError", async () => {
    const user = await register(app)
    const client = await app.client(user.token)
    const setup = await Effect.runPromise(client.accounts.setUpTwoFactor())
    const wrong = await Effect.runPromise(Effect.either(client.accounts.confirmTwoFactor({ payload: { code: wrongCode(setup.secret) } })))
    expect(Either.isLeft(wrong) && wrong.left._tag).toBe("ValidationError")
    const enabled = await Effect.runPromise(client.accounts.confirmTwoFactor({ payload: { code: codeAt(setup.secret) } }))
    expect(enabled.data.recovery_codes).toHaveLength(10)
    const me = await Effect.runPromise(client.accounts.user())
    expect(me.two_factor).toBe(true)
    nextMinute()
    const anonymous = await app.client()
    const signedIn = await Effect.runPromise(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD, otp: codeAt(setup.secret) } }))
    expect(signedIn.user.email).toBe(user.email)
  })
})

describe("login with two-factor sign-in on", () => {
  test("without otp 422; a wrong password stays 401; a wrong otp 422; the right one 200 with a token; the same code again 422", async () => {
    const user = await withTwoFactor()
    const missing = await login(user.email)
    expect(missing.status).toBe(422)
    expect(missing.body).toEqual({ success: false, message: "The given data was invalid.", errors: { otp: ["The otp field is required."] } })
    expect(missing.text).not.toContain("token")

    const badPassword = await login(user.email, { otp: codeAt(user.secret) }, "Wrong-Password-9")
    expect(badPassword.status).toBe(401)
    expect(badPassword.body).toEqual({ success: false, message: "Invalid credentials." })

    const wrong = await login(user.email, { otp: wrongCode(user.secret) })
    expect(wrong.status).toBe(422)
    expect(wrong.body).toEqual({ success: false, message: "The given data was invalid.", errors: { otp: [INVALID] } })

    const code = codeAt(user.secret)
    const signedIn = await signIn(user.email, { otp: code })
    expect(signedIn.token).toMatch(/^[1-9][0-9]*\|[A-Za-z0-9]{40}$/)
    expect(await twoFactorOf(signedIn.token)).toBe(true)

    const replay = await login(user.email, { otp: code })
    expect(replay.status).toBe(422)
    expect(replay.body.errors).toEqual({ otp: [INVALID] })
  })

  test("a code of the previous or the next step is accepted (±1), then no code of an earlier or the same step; two steps away never", async () => {
    const user = await withTwoFactor()
    expect<number>((await signIn(user.email, { otp: codeAt(user.secret, -STEP) })).user.id).toBe(user.id)
    expect<number>((await signIn(user.email, { otp: codeAt(user.secret, STEP) })).user.id).toBe(user.id)
    // the next step was used: the current one (and the previous) are behind it
    const current = codeAt(user.secret)
    if (current !== codeAt(user.secret, STEP)) expect((await login(user.email, { otp: current })).status).toBe(422)
    nextMinute()
    const farAhead = codeAt(user.secret, 2 * STEP)
    if (![-STEP, 0, STEP].some((offset) => codeAt(user.secret, offset) === farAhead)) {
      const res = await login(user.email, { otp: farAhead })
      expect(res.status).toBe(422)
      expect(res.body.errors).toEqual({ otp: [INVALID] })
    }
    expect<number>((await signIn(user.email, { otp: ` ${codeAt(user.secret).slice(0, 3)} ${codeAt(user.secret).slice(3)} ` })).user.id).toBe(user.id)
  })

  test("the same code sent twice at once signs in once", async () => {
    const user = await withTwoFactor()
    const code = codeAt(user.secret)
    const results = await Promise.all([login(user.email, { otp: code }), login(user.email, { otp: code })])
    expect(results.map((r) => r.status).sort()).toEqual([200, 422])
  })

  test("a recovery code signs in once; written in capitals or without its dash it is the same code; a wrong one is 422 errors.otp", async () => {
    const user = await withTwoFactor()
    const [first, second] = user.recoveryCodes
    const signedIn = await signIn(user.email, { recovery_code: first! })
    expect(typeof signedIn.token).toBe("string")
    const reused = await login(user.email, { recovery_code: first })
    expect(reused.status).toBe(422)
    expect(reused.body.errors).toEqual({ otp: [INVALID] })
    expect<number>((await signIn(user.email, { recovery_code: second!.toUpperCase().replace("-", "") })).user.id).toBe(user.id)
    const wrong = await login(user.email, { recovery_code: "aaaaa-bbbbb" })
    expect(wrong.status).toBe(422)
    expect(wrong.body.errors).toEqual({ otp: [INVALID] })
    const [row] = await app.sql<{ n: number }>`select cardinality(two_factor_recovery) as n from users where id = ${user.id}`
    expect(row!.n).toBe(8)
  })

  test("a user without two-factor sign-in logs in as before; an otp sent along is ignored", async () => {
    const user = await register(app)
    expect<number>((await signIn(user.email)).user.id).toBe(user.id)
    expect<number>((await signIn(user.email, { otp: "123456" })).user.id).toBe(user.id)
  })

  test("wrong second factors count against the login limit ([D30])", async () => {
    const user = await withTwoFactor()
    for (let i = 0; i < 5; i++) expect((await login(user.email, { otp: wrongCode(user.secret) })).status).toBe(422)
    const blocked = await login(user.email, { otp: codeAt(user.secret) })
    expect(blocked.status).toBe(429)
  })
})

describe("turning it off", () => {
  test("needs the password (422 errors.password) and a code (422 errors.code); then login needs no otp", async () => {
    const user = await withTwoFactor()
    const badPassword = await app.del("/v1/account/2fa", { token: user.token, body: { password: "Wrong-Password-9", code: codeAt(user.secret) } })
    expect(badPassword.status).toBe(422)
    expect(badPassword.body.errors).toEqual({ password: ["The password is incorrect."] })
    const badCode = await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: wrongCode(user.secret) } })
    expect(badCode.status).toBe(422)
    expect(badCode.body.errors).toEqual({ code: [INVALID] })
    const missing = await app.del("/v1/account/2fa", { token: user.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({ password: ["The password field is required."], code: ["The code field is required."] })
    expect(await twoFactorOf(user.token)).toBe(true)

    const res = await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: codeAt(user.secret) } })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "Two-factor authentication disabled.", data: {} })
    expect(await twoFactorOf(user.token)).toBe(false)
    expect<number>((await signIn(user.email)).user.id).toBe(user.id)
    const [row] = await app.sql<{ secret: string | null; n: number }>`
      select two_factor_secret as secret, cardinality(two_factor_recovery) as n from users where id = ${user.id}`
    expect(row).toEqual({ secret: null, n: 0 })

    const again = await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: codeAt(user.secret) } })
    expect(again.status).toBe(422)
    expect(again.body.errors).toEqual({ two_factor: ["Two-factor authentication is not enabled."] })
  })

  test("a recovery code stands in for the code", async () => {
    const user = await withTwoFactor()
    const me = await as(user.token)
    expect(await ok(me.accounts.disableTwoFactor({ payload: { password: PASSWORD, code: user.recoveryCodes[3]! } }))).toBe(
      "Two-factor authentication disabled."
    )
    expect(await twoFactorOf(user.token)).toBe(false)
  })
})

describe("guessing codes", () => {
  test("confirm and disable allow 5 attempts a minute per user, then 429", async () => {
    const user = await withTwoFactor()
    for (let i = 0; i < 5; i++) {
      const res = await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: wrongCode(user.secret) } })
      expect(res.status).toBe(422)
    }
    const blocked = await app.del("/v1/account/2fa", { token: user.token, body: { password: PASSWORD, code: codeAt(user.secret) } })
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
    nextMinute()
    const me = await as(user.token)
    await ok(me.accounts.disableTwoFactor({ payload: { password: PASSWORD, code: codeAt(user.secret) } }))
  })
})

describe("ADMIN_REQUIRE_2FA", () => {
  test("an admin without two-factor sign-in gets 403 on admin routes, 200 once it is on and a login passed it ([D115]); other routes unchanged", async () => {
    const strict = await makeTestApp({ config: { adminRequire2fa: true }, reset: false })
    try {
      strict.clock.set(app.clock.get())
      const admin = await strict.createUser({ role: "admin" })
      const refused = await strict.get("/v1/admin/users", { token: admin.token })
      expect(refused.status).toBe(403)
      expect(refused.body).toEqual({ success: false, message: "Two-factor authentication required." })
      const asAdmin = await typedClient(strict, { token: admin.token })
      expect((await ok(asAdmin.accounts.user())).id).toBe(admin.id)
      const user = await strict.createUser()
      const notAdmin = await strict.get("/v1/admin/users", { token: user.token })
      expect(notAdmin.status).toBe(403)
      expect(notAdmin.body).toEqual({ success: false, message: "Forbidden." })

      const secret = (await ok(asAdmin.accounts.setUpTwoFactor())).secret
      await ok(asAdmin.accounts.confirmTwoFactor({ payload: { code: codeAt(secret) } }))
      // [D115] (rev. 3 of [D97]): the password-only token stays refused; a login with the code passes
      expect((await strict.get("/v1/admin/users", { token: admin.token })).body).toEqual({ success: false, message: "Two-factor authentication required." })
      strict.clock.advance(61_000)
      const anonymous = await typedClient(strict, { headers: anyAddress() })
      const signedIn = await ok(
        anonymous.accounts.login({
          payload: { email: admin.email, password: admin.password, otp: codeAt(secret, strict.clock.get().getTime() - app.clock.get().getTime()) }
        })
      )
      const withCode = await typedClient(strict, { token: signedIn.token })
      await ok(withCode.accountsAdmin.listUsers({ urlParams: {} }))
    } finally {
      await strict.dispose()
    }
    // without the variable an admin needs no second factor
    const admin = await app.createUser({ role: "admin" })
    const asAdmin = await as(admin.token)
    await ok(asAdmin.accountsAdmin.listUsers({ urlParams: {} }))
  })
})
