import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer, Option, Redacted } from "effect"
import { AccountsStartup, ensureAdmin } from "../../src/accounts/Startup.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { PASSWORD, register } from "./helpers.ts"

// [D70] admin users; [D1] the admin of ADMIN_EMAIL / ADMIN_PASSWORD; [D21] role and status.
const ADMIN_EMAIL = "root@example.com"
const ADMIN_PASSWORD = "Admin-Str0ng-Secret"

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({
    config: { adminEmail: Option.some(ADMIN_EMAIL), adminPassword: Option.some(Redacted.make(ADMIN_PASSWORD)) }
  })
})
afterAll(() => app.dispose())

const startup = () => app.run(Effect.scoped(Layer.build(AccountsStartup)))

const adminToken = async () => {
  const anonymous = await typedClient(app, {
    headers: { "x-forwarded-for": `10.60.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` }
  })
  return (await ok(anonymous.accounts.login({ payload: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } }))).token
}

/** the seeded admin signed in, as a typed client */
const signedInAdmin = async () => typedClient(app, { token: await adminToken() })

describe("admin bootstrap [D1]", () => {
  test("start-up creates the admin, verified, role admin; running again changes nothing", async () => {
    await startup()
    const admin = await signedInAdmin()
    const me = await ok(admin.accounts.user())
    expect(me).toMatchObject({ email: ADMIN_EMAIL, role: "admin", status: 1 })
    expect(me.email_verified_at).toBeInstanceOf(Date)
    await startup()
    const rows = await app.sql<{ n: number }>`select count(*)::int as n from users where email = ${ADMIN_EMAIL}`
    expect(rows[0]!.n).toBe(1)
  })

  test("never changes an existing password; an existing account of that e-mail becomes admin", async () => {
    const user = await register(app, { email: "boss@example.com" })
    const outcome = await app.run(ensureAdmin("BOSS@example.com", "Some-Other-Passw0rd"))
    expect(outcome).toBe("promoted")
    const anonymous = await typedClient(app, { headers: { "x-forwarded-for": "10.61.0.1" } })
    const login = await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))
    const boss = await typedClient(app, { token: login.token })
    expect((await ok(boss.accounts.user())).role).toBe("admin")
    expect(await app.run(ensureAdmin("boss@example.com", "Yet-Another-Passw0rd"))).toBe("exists")
  })

  test("without both variables nothing is created", async () => {
    const before = await app.sql<{ n: number }>`select count(*)::int as n from users`
    const lonely = await makeTestApp({ reset: false, config: { adminEmail: Option.some("only@example.com") } })
    try {
      await lonely.run(Effect.scoped(Layer.build(AccountsStartup)))
    } finally {
      await lonely.dispose()
    }
    const after = await app.sql<{ n: number }>`select count(*)::int as n from users`
    expect(after[0]!.n).toBe(before[0]!.n)
  })
})

describe("GET /v1/admin/users [D70]", () => {
  test("no token 401; a non-admin 403 Forbidden.", async () => {
    const none = await app.get("/v1/admin/users")
    expect(none.status).toBe(401)
    expect(none.body).toEqual({ success: false, message: "Unauthenticated." })
    const user = await register(app)
    const res = await app.get("/v1/admin/users", { token: user.token })
    expect(res.status).toBe(403)
    expect(res.body).toEqual({ success: false, message: "Forbidden." })
    const put = await app.put(`/v1/admin/users/${user.id}`, { token: user.token, body: { role: "admin" } })
    expect(put.status).toBe(403)
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.accounts.user())).role).toBe("user")
  })

  test("15 a page with meta and links; email filters by case-insensitive substring", async () => {
    await app.sql`delete from users where email <> ${ADMIN_EMAIL}`
    await startup()
    const token = await adminToken()
    const admin = await typedClient(app, { token })
    for (let i = 0; i < 17; i++) {
      await app.sql`insert into users (name, email, password_hash) values (${`Member ${i}`}, ${`member${i}@listing.test`}, 'x')`
    }
    const first = await app.get("/v1/admin/users", { token })
    expect(first.status).toBe(200)
    expect(first.body.success).toBe(true)
    expect(first.body.data).toHaveLength(15)
    expect(first.body.meta).toEqual({ current_page: 1, last_page: 2, per_page: 15, total: 18 })
    expect(first.body.links).toEqual({
      first: "http://localhost:3000/v1/admin/users?page=1",
      last: "http://localhost:3000/v1/admin/users?page=2",
      prev: null,
      next: "http://localhost:3000/v1/admin/users?page=2"
    })
    expect(Object.keys(first.body.data[0]).sort()).toEqual(["created_at", "email", "email_verified_at", "id", "name", "role", "status", "two_factor"])
    const second = await ok(admin.accountsAdmin.listUsers({ urlParams: { page: 2 } }))
    expect(second.data).toHaveLength(3)

    const filtered = await ok(admin.accountsAdmin.listUsers({ urlParams: { email: "MEMBER1" } }))
    // member1, member10 .. member16
    expect(filtered.meta.total).toBe(8)
    expect(filtered.data.every((u) => u.email.includes("member1"))).toBe(true)
    expect(filtered.links.first).toBe("http://localhost:3000/v1/admin/users?email=MEMBER1&page=1")

    const past = await ok(admin.accountsAdmin.listUsers({ urlParams: { page: 9 } }))
    expect(past.data).toEqual([])

    for (const page of ["0", "abc", "-1", "1.5"]) {
      const bad = await app.get(`/v1/admin/users?page=${page}`, { token })
      expect(bad.status).toBe(422)
      expect(Object.keys(bad.body.errors)).toEqual(["page"])
    }
  })
})

describe("PUT /v1/admin/users/{user} [D70]", () => {
  test("disables a user: its tokens stop working at once and it cannot log in; enabling restores", async () => {
    await startup()
    const admin = await signedInAdmin()
    const user = await register(app)
    const disabled = await ok(admin.accountsAdmin.updateUser({ path: { user: user.id }, payload: { status: 0 } }))
    expect(disabled).toMatchObject({ id: user.id, email: user.email, status: 0, role: "user" })
    const userClient = await typedClient(app, { token: user.token })
    expect((await fails(userClient.accounts.user()))._tag).toBe("Unauthenticated")
    const login = await app.post("/v1/auth/login", {
      body: { email: user.email, password: PASSWORD },
      headers: { "x-forwarded-for": "10.62.0.1" }
    })
    expect(login.status).toBe(403)
    expect(login.body.message).toBe("Account disabled.")
    const enable = await ok(admin.accountsAdmin.updateUser({ path: { user: user.id }, payload: { status: 1 } }))
    expect(enable.status).toBe(1)
    expect<number>((await ok(userClient.accounts.user())).id).toBe(user.id)
  })

  test("changes the role; an admin token then reaches admin routes", async () => {
    await startup()
    const admin = await signedInAdmin()
    const user = await register(app)
    const promoted = await ok(admin.accountsAdmin.updateUser({ path: { user: user.id }, payload: { role: "admin" } }))
    expect(promoted.role).toBe("admin")
    const promotedClient = await typedClient(app, { token: user.token })
    expect((await ok(promotedClient.accountsAdmin.listUsers({ urlParams: {} }))).meta.current_page).toBe(1)
  })

  test("invalid values are 422; an unknown or impossible id is 404", async () => {
    await startup()
    const token = await adminToken()
    const user = await register(app)
    const bad = await app.put(`/v1/admin/users/${user.id}`, { token, body: { status: 2, role: "root" } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.status).toEqual(["The selected status is invalid."])
    expect(bad.body.errors.role).toEqual(["The selected role is invalid."])
    for (const id of ["999999", "abc", "0"]) {
      const res = await app.put(`/v1/admin/users/${id}`, { token, body: { status: 1 } })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
  })
})

describe("GET /v1/admin/users?email= search [D70] (issue 18: the trigram-indexed like)", () => {
  test("the part is matched literally: `_` is not a wildcard, and case does not matter", async () => {
    app.clock.advance(3_600_000) // past the login limit of the admin's e-mail
    const admin = await signedInAdmin()
    await register(app, { email: "under_score@search.example" })
    await register(app, { email: "underXscore@search.example" })
    const found = await ok(admin.accountsAdmin.listUsers({ urlParams: { email: "UNDER_SCORE" } }))
    expect(found.data.map((u) => u.email)).toEqual(["under_score@search.example"])
    expect(found.meta.total).toBe(1)
    const both = await ok(admin.accountsAdmin.listUsers({ urlParams: { email: "score@search" } }))
    expect(both.meta.total).toBe(2)
    const none = await ok(admin.accountsAdmin.listUsers({ urlParams: { email: "%" } }))
    expect(none.meta.total).toBe(0)
  })
})
