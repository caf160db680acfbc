import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { freshEmail, PASSWORD, register, resetTokenOf, settle, verifyTokenOf, waitForMail, anyAddress } from "./helpers.ts"

// [D22] verification, [D23] password reset: mails through the mailer, random single-use hashed tokens.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ config: { appUrl: "https://app.example.test" } })
})
afterAll(() => app.dispose())

const sha256 = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex")
const NEW_PASSWORD = "Another-Str0ng-Secret"

/** the typed client from a client address of its own ([D30]), signed in with `token` when given */
const client = (token?: string, headers: Record<string, string> = anyAddress()) => typedClient(app, { headers, ...(token === undefined ? {} : { token }) })

/** a typed sign-in from the address `ip` that must succeed: the user it answers */
const signIn = async (email: string, password: string, ip: string) => {
  const anonymous = await client(undefined, { "x-forwarded-for": ip })
  return (await ok(anonymous.accounts.login({ payload: { email, password } }))).user
}

describe("e-mail verification [D22]", () => {
  test("register sends a mail with $APP_URL/verify-email?token=<token> and the token itself; only its hash is stored", async () => {
    const user = await register(app)
    const mail = await waitForMail(app, (m) => m.to === user.email)
    const token = verifyTokenOf(mail)
    expect(mail.text).toContain(`https://app.example.test/verify-email?token=${token}`)
    expect(mail.text.split(/\s+/)).toContain(token)
    expect(token.length).toBeGreaterThanOrEqual(40)
    const rows = await app.sql<{ token_hash: string; purpose: string }>`
      select token_hash, purpose from mail_tokens where user_id = ${user.id}`
    expect(rows).toEqual([{ token_hash: sha256(token), purpose: "verify_email" }])
  })

  test("verify-email with the token: 200 Email verified., email_verified_at set; the token is single-use", async () => {
    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const anonymous = await client()
    expect(await ok(anonymous.accounts.verifyEmail({ payload: { token } }))).toBe("Email verified.")
    const signedIn = await client(user.token)
    const me = await ok(signedIn.accounts.user())
    expect(me.email_verified_at).toEqual(app.clock.get())
    const again = await app.post("/v1/auth/verify-email", { headers: anyAddress(), body: { token } })
    expect(again.status).toBe(422)
    expect(again.body.errors.token).toHaveLength(1)
  })

  test("an unknown token, a missing one and one older than 24 h are 422 errors.token", async () => {
    const bogus = await app.post("/v1/auth/verify-email", { headers: anyAddress(), body: { token: "x".repeat(64) } })
    expect(bogus.status).toBe(422)
    expect(bogus.body.message).toBe("The given data was invalid.")
    expect(Object.keys(bogus.body.errors)).toEqual(["token"])
    const missing = await app.post("/v1/auth/verify-email", { headers: anyAddress(), body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors.token).toEqual(["The token field is required."])

    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    app.clock.advance(24 * 3_600_000 + 1000)
    const expired = await app.post("/v1/auth/verify-email", { headers: anyAddress(), body: { token } })
    expect(expired.status).toBe(422)
    expect(expired.body.errors.token).toHaveLength(1)
    const me = await client(user.token)
    expect((await ok(me.accounts.user())).email_verified_at).toBeNull()
  })

  test("two concurrent uses of one token: one success", async () => {
    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const results = await Promise.all(Array.from({ length: 5 }, () => app.post("/v1/auth/verify-email", { headers: anyAddress(), body: { token } })))
    expect(results.map((r) => r.status).sort()).toEqual([200, 422, 422, 422, 422])
  })

  test("resend-verification sends a new token and invalidates the older ones", async () => {
    const user = await register(app)
    const first = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const me = await client(user.token)
    expect(typeof (await ok(me.accounts.resendVerification()))).toBe("string")
    const second = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email && !m.text.includes(first)))
    expect(second).not.toBe(first)
    expect((await app.post("/v1/auth/verify-email", { headers: anyAddress(), body: { token: first } })).status).toBe(422)
    const anonymous = await client()
    await ok(anonymous.accounts.verifyEmail({ payload: { token: second } }))
  })

  test("resend-verification for a verified user: 200 Email already verified., no mail", async () => {
    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const anonymous = await client()
    await ok(anonymous.accounts.verifyEmail({ payload: { token } }))
    await settle()
    const before = app.outbox.length
    const me = await client(user.token)
    expect(await ok(me.accounts.resendVerification())).toBe("Email already verified.")
    await settle()
    expect(app.outbox.length).toBe(before)
  })

  test("unverified users can use everything", async () => {
    const user = await register(app)
    const me = await client(user.token)
    expect<number>((await ok(me.accounts.profile())).id).toBe(user.id)
    expect((await ok(me.accounts.settings())).email_notifications).toBe(true)
  })
})

describe("password reset [D23]", () => {
  test("forgot-password: the same 200 body for known and unknown e-mails; mail only for the known one", async () => {
    const user = await register(app)
    await settle()
    const before = app.outbox.length
    const known = await app.post("/v1/auth/forgot-password", {
      body: { email: user.email.toUpperCase() },
      headers: { "x-forwarded-for": "10.9.0.1" }
    })
    const unknownEmail = freshEmail("ghost")
    const unknown = await app.post("/v1/auth/forgot-password", {
      body: { email: unknownEmail },
      headers: { "x-forwarded-for": "10.9.0.2" }
    })
    expect(known.status).toBe(200)
    expect(unknown.status).toBe(200)
    expect(unknown.text).toBe(known.text)
    expect(known.body.success).toBe(true)
    expect(known.body.data).toEqual({})
    expect(typeof known.body.message).toBe("string")
    const mail = await waitForMail(app, (m) => m.to === user.email && m.subject.toLowerCase().includes("reset"))
    const token = resetTokenOf(mail)
    expect(mail.text).toContain(`https://app.example.test/reset-password?token=${token}&email=${encodeURIComponent(user.email)}`)
    expect(mail.text.split(/\s+/)).toContain(token)
    await settle()
    expect(app.outbox.slice(before).filter((m) => m.to === unknownEmail)).toHaveLength(0)
    expect(app.outbox.length).toBe(before + 1)
    const rows = await app.sql<{ token_hash: string }>`
      select token_hash from mail_tokens where user_id = ${user.id} and purpose = 'reset_password'`
    expect(rows).toEqual([{ token_hash: sha256(token) }])
  })

  const requestReset = async (email: string, ip: string) => {
    const anonymous = await client(undefined, { "x-forwarded-for": ip })
    await ok(anonymous.accounts.forgotPassword({ payload: { email } }))
    return resetTokenOf(await waitForMail(app, (m) => m.to === email && m.subject.toLowerCase().includes("reset")))
  }

  test("reset-password sets the password, revokes every token, and is single-use", async () => {
    const user = await register(app)
    const token = await requestReset(user.email, "10.9.1.1")
    const reset = await client()
    const done = await ok(reset.accounts.resetPassword({ payload: { token, email: user.email, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD } }))
    expect(typeof done).toBe("string")
    const me = await client(user.token)
    expect((await fails(me.accounts.user()))._tag).toBe("Unauthenticated")
    const oldLogin = await app.post("/v1/auth/login", {
      body: { email: user.email, password: PASSWORD },
      headers: { "x-forwarded-for": "10.9.1.2" }
    })
    expect(oldLogin.status).toBe(401)
    expect<number>((await signIn(user.email, NEW_PASSWORD, "10.9.1.3")).id).toBe(user.id)
    const reuse = await app.post("/v1/auth/reset-password", {
      headers: anyAddress(),
      body: { token, email: user.email, password: "Third-Str0ng-Secret", password_confirmation: "Third-Str0ng-Secret" }
    })
    expect(reuse.status).toBe(422)
    expect(Object.keys(reuse.body.errors)).toEqual(["token"])
  })

  test("a bad token, another user's e-mail or a token older than 60 min is 422 errors.token", async () => {
    const user = await register(app)
    const other = await register(app)
    const token = await requestReset(user.email, "10.9.2.1")
    const body = (fields: Record<string, string>) => ({
      token,
      email: user.email,
      password: NEW_PASSWORD,
      password_confirmation: NEW_PASSWORD,
      ...fields
    })
    const bad = await app.post("/v1/auth/reset-password", { headers: anyAddress(), body: body({ token: "nope".repeat(16) }) })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors)).toEqual(["token"])
    const wrongEmail = await app.post("/v1/auth/reset-password", { headers: anyAddress(), body: body({ email: other.email }) })
    expect(wrongEmail.status).toBe(422)
    expect(Object.keys(wrongEmail.body.errors)).toEqual(["token"])
    app.clock.advance(60 * 60_000 + 1000)
    const late = await app.post("/v1/auth/reset-password", { headers: anyAddress(), body: body({}) })
    expect(late.status).toBe(422)
    expect(Object.keys(late.body.errors)).toEqual(["token"])
    // nothing changed: the old password still works
    expect<number>((await signIn(user.email, PASSWORD, "10.9.2.2")).id).toBe(user.id)
  })

  test("the new password is validated like at registration", async () => {
    const user = await register(app)
    const token = await requestReset(user.email, "10.9.3.1")
    const common = await app.post("/v1/auth/reset-password", {
      headers: anyAddress(),
      body: { token, email: user.email, password: "password1", password_confirmation: "password1" }
    })
    expect(common.status).toBe(422)
    expect(common.body.errors.password).toEqual(["The password field is too common."])
    const mismatch = await app.post("/v1/auth/reset-password", {
      headers: anyAddress(),
      body: { token, email: user.email, password: NEW_PASSWORD, password_confirmation: "different-1234" }
    })
    expect(mismatch.status).toBe(422)
    expect(mismatch.body.errors.password).toEqual(["The password field confirmation does not match."])
    // a refused attempt does not use the token up
    const reset = await client()
    await ok(reset.accounts.resetPassword({ payload: { token, email: user.email, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD } }))
  })

  test("two concurrent resets with one token: one success", async () => {
    const user = await register(app)
    const token = await requestReset(user.email, "10.9.4.1")
    const results = await Promise.all(
      [NEW_PASSWORD, "Third-Str0ng-Secret", "Fourth-Str0ng-Secret"].map((password) =>
        app.post("/v1/auth/reset-password", { headers: anyAddress(), body: { token, email: user.email, password, password_confirmation: password } })
      )
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 422, 422])
  })
})
