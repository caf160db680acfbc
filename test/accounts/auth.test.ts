import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { freshEmail, PASSWORD, register, anyAddress } from "./helpers.ts"

// [D20] [D21] [D12] [D13]: registration, login, tokens, the current user.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

/** the typed client of one token */
const as = (token: string) => typedClient(app, { token })
/** a typed client without a token, from a client address of its own ([D30]) */
const from = (address: string) => typedClient(app, { headers: { "x-forwarded-for": address } })

describe("register", () => {
  test("201 with a token and {id, name, email}; the token works; Cache-Control: no-store", async () => {
    const email = freshEmail()
    const res = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "Ada", email: `  ${email.toUpperCase()} `, password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(res.body.data.user).toEqual({ id: expect.any(Number), name: "Ada", email })
    expect(res.body.data.token).toMatch(/^[1-9][0-9]*\|[A-Za-z0-9]{40}$/)
    expect(res.headers.get("cache-control")).toBe("no-store")
    const client = await as(res.body.data.token)
    const me = await ok(client.accounts.user())
    expect(me.email).toBe(email)
  })

  test("the password is stored as an argon2id hash, never in clear", async () => {
    const user = await register(app)
    const [row] = await app.sql<{ password_hash: string }>`select password_hash from users where id = ${user.id}`
    expect(row!.password_hash.startsWith("$argon2id$")).toBe(true)
    expect(row!.password_hash).not.toContain(PASSWORD)
  })

  test("missing fields are each reported [D12]", async () => {
    const res = await app.post("/v1/auth/register", { headers: anyAddress(), body: {} })
    expect(res.status).toBe(422)
    expect(res.body.message).toBe("The given data was invalid.")
    expect(res.body.errors.name).toEqual(["The name field is required."])
    expect(res.body.errors.email).toEqual(["The email field is required."])
    expect(res.body.errors.password).toEqual(["The password field is required."])
  })

  test("bad e-mail, short password and long name", async () => {
    const res = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "x".repeat(256), email: "not-an-email", password: "short", password_confirmation: "short" }
    })
    expect(res.status).toBe(422)
    expect(res.body.errors.email).toEqual(["The email field must be a valid email address."])
    expect(res.body.errors.password).toEqual(["The password field must be at least 8 characters."])
    expect(res.body.errors.name).toEqual(["The name field must not be greater than 255 characters."])
  })

  test("a password over 128 characters is refused", async () => {
    const long = "a1B2".repeat(33)
    const res = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "x", email: freshEmail(), password: long, password_confirmation: long }
    })
    expect(res.status).toBe(422)
    expect(res.body.errors.password).toEqual(["The password field must not be greater than 128 characters."])
  })

  test("a mismatched or missing confirmation is reported under password [D12]", async () => {
    for (const confirmation of [`${PASSWORD}x`, undefined]) {
      const res = await app.post("/v1/auth/register", {
        headers: anyAddress(),
        body: { name: "x", email: freshEmail(), password: PASSWORD, password_confirmation: confirmation }
      })
      expect(res.status).toBe(422)
      expect(res.body.errors).toEqual({ password: ["The password field confirmation does not match."] })
    }
  })

  test("one of the 10 000 most common passwords is too common [D13]", async () => {
    for (const common of ["password", "12345678", "password123", "iloveyou", "qwerty123"]) {
      const res = await app.post("/v1/auth/register", {
        headers: anyAddress(),
        body: { name: "x", email: freshEmail(), password: common, password_confirmation: common }
      })
      expect(res.status).toBe(422)
      expect(res.body.errors.password).toEqual(["The password field is too common."])
    }
  })

  test("a taken e-mail, in any case, is 422 errors.email", async () => {
    const user = await register(app)
    const res = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "x", email: user.email.toUpperCase(), password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { email: ["The email has already been taken."] }
    })
  })

  test("12 concurrent registrations of one e-mail in mixed case: exactly one 201, the rest 422, never 500", async () => {
    const email = freshEmail("race")
    const variants = Array.from({ length: 12 }, (_, i) => [...email].map((c, j) => ((i + j) % 2 === 0 ? c.toUpperCase() : c)).join(""))
    const results = await Promise.all(
      variants.map((variant) =>
        app.post("/v1/auth/register", { headers: anyAddress(), body: { name: "Racer", email: variant, password: PASSWORD, password_confirmation: PASSWORD } })
      )
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 201)).toHaveLength(1)
    expect(statuses.filter((s) => s === 422)).toHaveLength(11)
    for (const r of results.filter((r) => r.status === 422)) {
      expect(r.body.errors.email).toEqual(["The email has already been taken."])
    }
    const rows = await app.sql<{ n: number }>`select count(*)::int as n from users where lower(email) = ${email}`
    expect(rows[0]!.n).toBe(1)
  }, 30_000)

  test("mass assignment: role, status, id and email_verified_at in the body change nothing", async () => {
    const email = freshEmail("mass")
    const res = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: {
        name: "Mallory",
        email,
        password: PASSWORD,
        password_confirmation: PASSWORD,
        role: "admin",
        status: 0,
        id: 999999,
        email_verified_at: "2020-01-01T00:00:00Z"
      }
    })
    expect(res.status).toBe(201)
    expect(res.body.data.user.id).not.toBe(999999)
    const client = await as(res.body.data.token)
    const me = await ok(client.accounts.user())
    expect(me.role).toBe("user")
    expect(me.status).toBe(1)
    expect(me.email_verified_at).toBeNull()
  })
})

describe("login", () => {
  test("200 with a new token and {id, name, email, status}; Cache-Control: no-store", async () => {
    const user = await register(app, { name: "Grace" })
    const res = await app.post("/v1/auth/login", { body: { email: user.email.toUpperCase(), password: PASSWORD } })
    expect(res.status).toBe(200)
    expect(res.body.data.user).toEqual({ id: user.id, name: "Grace", email: user.email, status: 1 })
    expect(res.body.data.token).toMatch(/^[1-9][0-9]*\|[A-Za-z0-9]{40}$/)
    expect(res.body.data.token).not.toBe(user.token)
    expect(res.headers.get("cache-control")).toBe("no-store")
    // both tokens work: login issues a new one, it does not replace the old
    const old = await as(user.token)
    expect<number>((await ok(old.accounts.user())).id).toBe(user.id)
    const fresh = await as(res.body.data.token)
    expect<number>((await ok(fresh.accounts.user())).id).toBe(user.id)
  })

  test("a wrong password and an unknown e-mail are the same 401 Invalid credentials.", async () => {
    const user = await register(app)
    const wrong = await app.post("/v1/auth/login", {
      body: { email: user.email, password: "Wrong-password-1" },
      headers: { "x-forwarded-for": "10.1.0.1" }
    })
    const unknown = await app.post("/v1/auth/login", {
      body: { email: freshEmail("nobody"), password: "Wrong-password-1" },
      headers: { "x-forwarded-for": "10.1.0.2" }
    })
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Invalid credentials." })
    }
  })

  test("a disabled account is 403 Account disabled. (only with the right password)", async () => {
    const user = await register(app)
    await app.sql`update users set status = 0 where id = ${user.id}`
    const res = await app.post("/v1/auth/login", {
      body: { email: user.email, password: PASSWORD },
      headers: { "x-forwarded-for": "10.1.0.3" }
    })
    expect(res.status).toBe(403)
    expect(res.body).toEqual({ success: false, message: "Account disabled." })
    const wrong = await app.post("/v1/auth/login", {
      body: { email: user.email, password: "Wrong-password-1" },
      headers: { "x-forwarded-for": "10.1.0.4" }
    })
    expect(wrong.status).toBe(401)
  })

  test("missing fields are 422", async () => {
    const res = await app.post("/v1/auth/login", { body: {}, headers: { "x-forwarded-for": "10.1.0.5" } })
    expect(res.status).toBe(422)
    expect(res.body.errors.email).toEqual(["The email field is required."])
    expect(res.body.errors.password).toEqual(["The password field is required."])
  })
})

describe("tokens [D20]", () => {
  test("logout revokes only the calling token", async () => {
    const user = await register(app)
    const anonymous = await from("10.2.0.1")
    const other = (await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))).token
    const res = await app.post("/v1/auth/logout", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "Successfully logged out.", data: {} })
    const gone = await app.get("/v1/user", { token: user.token })
    expect(gone.status).toBe(401)
    expect(gone.body).toEqual({ success: false, message: "Unauthenticated." })
    const still = await as(other)
    expect<number>((await ok(still.accounts.user())).id).toBe(user.id)
  })

  test("logout-all revokes every token of the user, and no other user's", async () => {
    const user = await register(app)
    const stranger = await register(app)
    const anonymous = await from("10.2.0.2")
    const second = (await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))).token
    const res = await app.post("/v1/auth/logout-all", { token: second })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.data).toEqual({})
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(401)
    expect((await app.get("/v1/user", { token: second })).status).toBe(401)
    const theirs = await as(stranger.token)
    expect<number>((await ok(theirs.accounts.user())).id).toBe(stranger.id)
  })

  test("only a SHA-256 of the secret is stored", async () => {
    const user = await register(app)
    const [id, secret] = user.token.split("|")
    const [row] = await app.sql<{ secret_hash: string }>`select secret_hash from access_tokens where id = ${Number(id)}`
    expect(row!.secret_hash).toBe(new Bun.CryptoHasher("sha256").update(secret!).digest("hex"))
  })

  test("only the Bearer scheme, any case; a tampered secret is 401", async () => {
    const user = await register(app)
    expect((await app.get("/v1/user", { headers: { authorization: `bearer ${user.token}` } })).status).toBe(200)
    expect((await app.get("/v1/user", { headers: { authorization: `BEARER ${user.token}` } })).status).toBe(200)
    expect((await app.get("/v1/user", { headers: { authorization: `Token ${user.token}` } })).status).toBe(401)
    expect((await app.get("/v1/user", { headers: { authorization: `Basic ${user.token}` } })).status).toBe(401)
    const tampered = user.token.slice(0, -1) + (user.token.endsWith("a") ? "b" : "a")
    expect((await app.get("/v1/user", { token: tampered })).status).toBe(401)
    expect((await app.get("/v1/user")).status).toBe(401)
  })

  test("expires TOKEN_TTL_DAYS after the last use; last_used_at written at most once a minute", async () => {
    const user = await register(app)
    const id = Number(user.token.split("|")[0])
    const lastUsed = async () => (await app.sql<{ last_used_at: Date }>`select last_used_at from access_tokens where id = ${id}`)[0]!.last_used_at.getTime()
    const first = await lastUsed()
    const me = await as(user.token)
    app.clock.advance(30_000)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    expect(await lastUsed()).toBe(first)
    app.clock.advance(31_000)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    expect(await lastUsed()).toBe(first + 61_000)
    // 29 days later it still works (and is touched); 30 days after that last use it does not
    app.clock.advance(29 * 86_400_000)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    app.clock.advance(30 * 86_400_000)
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(401)
  })

  test("a disabled user's token stops working on the next request", async () => {
    const user = await register(app)
    const me = await as(user.token)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    await app.sql`update users set status = 0 where id = ${user.id}`
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(401)
    expect((await app.get("/v1/account/profile", { token: user.token })).status).toBe(401)
  })
})

describe("GET /v1/user [D21]", () => {
  test("returns id, name, email, status, role, email_verified_at, created_at, two_factor [D97]", async () => {
    const before = app.clock.get().toISOString()
    const user = await register(app, { name: "Linus" })
    const res = await app.get("/v1/user", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: user.id,
        name: "Linus",
        email: user.email,
        status: 1,
        role: "user",
        email_verified_at: null,
        created_at: before,
        two_factor: false
      }
    })
  })

  test("protected routes without a token are 401 Unauthenticated.", async () => {
    for (const [method, path] of [
      ["GET", "/v1/user"],
      ["POST", "/v1/auth/logout"],
      ["POST", "/v1/auth/logout-all"],
      ["POST", "/v1/auth/resend-verification"],
      ["GET", "/v1/account/profile"],
      ["PUT", "/v1/account/profile"],
      ["PUT", "/v1/account/password"],
      ["GET", "/v1/account/settings"],
      ["PUT", "/v1/account/settings"],
      ["DELETE", "/v1/account"]
    ] as const) {
      const res = await app.request(method, path, { body: {} })
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
    }
  })
})
