import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { freshEmail, PASSWORD, register, settle, verifyTokenOf, waitForMail, anyAddress } from "./helpers.ts"

// [D24] profile, password, settings; [D25] account deletion.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const NEW_PASSWORD = "Another-Str0ng-Secret"

const login = (email: string, password: string, ip: string) => app.post("/v1/auth/login", { body: { email, password }, headers: { "x-forwarded-for": ip } })

/** the typed client, signed in with `token` when given, from a client address of its own ([D30]) */
const client = (token?: string) => typedClient(app, { headers: anyAddress(), ...(token === undefined ? {} : { token }) })

/** a typed sign-in from the address `ip`, answering the new token */
const signIn = async (email: string, password: string, ip: string) => {
  const anonymous = await typedClient(app, { headers: { "x-forwarded-for": ip } })
  return (await ok(anonymous.accounts.login({ payload: { email, password } }))).token
}

const verifyEmail = async (token: string) => {
  const anonymous = await client()
  expect(await ok(anonymous.accounts.verifyEmail({ payload: { token } }))).toBe("Email verified.")
}

const verified = async () => {
  const user = await register(app)
  await verifyEmail(verifyTokenOf(await waitForMail(app, (m) => m.to === user.email)))
  return user
}

describe("profile [D24]", () => {
  test("GET returns {id, name, email, created_at, locale} ([D120])", async () => {
    const user = await register(app, { name: "Alan" })
    const res = await app.get("/v1/account/profile", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: { id: user.id, name: "Alan", email: user.email, created_at: app.clock.get().toISOString(), locale: "en" }
    })
  })

  test("PUT changes only the fields present", async () => {
    const user = await verified()
    const me = await client(user.token)
    const updated = await ok(me.accounts.updateProfile({ payload: { name: "New Name" } }))
    expect<unknown>(updated).toEqual({ message: "Profile updated.", data: { id: user.id, name: "New Name", email: user.email } })
    expect((await ok(me.accounts.user())).email_verified_at).toBeInstanceOf(Date)
  })

  test("a new e-mail is stored lower-cased, clears email_verified_at and sends a verification mail to it", async () => {
    const user = await verified()
    const next = freshEmail("moved")
    const me = await client(user.token)
    // upper case on the wire: the typed client refuses to encode it (the schema's type side is lower-cased)
    const res = await app.put("/v1/account/profile", { token: user.token, body: { email: next.toUpperCase() } })
    expect(res.status).toBe(200)
    expect(res.body.data.email).toBe(next)
    expect((await ok(me.accounts.user())).email_verified_at).toBeNull()
    await verifyEmail(verifyTokenOf(await waitForMail(app, (m) => m.to === next)))
    expect((await ok(me.accounts.user())).email_verified_at).toBeInstanceOf(Date)
  })

  test("the same e-mail again keeps the verification", async () => {
    const user = await verified()
    const me = await client(user.token)
    const res = await app.put("/v1/account/profile", { token: user.token, body: { email: user.email.toUpperCase() } })
    expect(res.status).toBe(200)
    expect((await ok(me.accounts.user())).email_verified_at).toBeInstanceOf(Date)
  })

  test("a taken e-mail is 422 errors.email; invalid fields are 422", async () => {
    const user = await register(app)
    const other = await register(app)
    const taken = await app.put("/v1/account/profile", { token: user.token, body: { email: other.email.toUpperCase() } })
    expect(taken.status).toBe(422)
    expect(taken.body.errors).toEqual({ email: ["The email has already been taken."] })
    const bad = await app.put("/v1/account/profile", { token: user.token, body: { name: "", email: "nope" } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.name).toEqual(["The name field is required."])
    expect(bad.body.errors.email).toEqual(["The email field must be a valid email address."])
  })

  test("mass assignment: role, status, id, email_verified_at in the body change nothing", async () => {
    const user = await register(app)
    const res = await app.put("/v1/account/profile", {
      token: user.token,
      body: { name: "Still Me", role: "admin", status: 0, id: 424242, email_verified_at: "2020-01-01T00:00:00Z" }
    })
    expect(res.status).toBe(200)
    const me = await client(user.token)
    expect(await ok(me.accounts.user())).toMatchObject({ id: user.id, name: "Still Me", role: "user", status: 1, email_verified_at: null })
  })
})

describe("password [D24]", () => {
  test("a wrong current password is 422 errors.current_password The password is incorrect.", async () => {
    const user = await register(app)
    const res = await app.put("/v1/account/password", {
      token: user.token,
      body: { current_password: "Not-The-Password-1", password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD }
    })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { current_password: ["The password is incorrect."] }
    })
  })

  test("the new password is validated (length, confirmation, common)", async () => {
    const user = await register(app)
    const res = await app.put("/v1/account/password", {
      token: user.token,
      body: { current_password: PASSWORD, password: "abc", password_confirmation: "abc" }
    })
    expect(res.status).toBe(422)
    expect(res.body.errors.password).toEqual(["The password field must be at least 8 characters."])
    const common = await app.put("/v1/account/password", {
      token: user.token,
      body: { current_password: PASSWORD, password: "sunshine", password_confirmation: "sunshine" }
    })
    expect(common.body.errors.password).toEqual(["The password field is too common."])
    const mismatch = await app.put("/v1/account/password", {
      token: user.token,
      body: { current_password: PASSWORD, password: NEW_PASSWORD, password_confirmation: "x" }
    })
    expect(mismatch.body.errors.password).toEqual(["The password field confirmation does not match."])
  })

  test("changes the password and revokes every other token, keeping the caller's", async () => {
    const user = await register(app)
    const other = await signIn(user.email, PASSWORD, "10.3.0.1")
    const me = await client(user.token)
    const changed = await ok(
      me.accounts.changePassword({ payload: { current_password: PASSWORD, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD } })
    )
    expect(changed).toBe("Password updated.")
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
    const otherSession = await client(other)
    expect((await fails(otherSession.accounts.user()))._tag).toBe("Unauthenticated")
    expect((await login(user.email, PASSWORD, "10.3.0.2")).status).toBe(401)
    expect((await signIn(user.email, NEW_PASSWORD, "10.3.0.3")).length).toBeGreaterThan(20)
  })
})

describe("settings [D24]", () => {
  test("email_notifications defaults to true; PUT returns 200 Settings updated. with the settings", async () => {
    const user = await register(app)
    const get = await app.get("/v1/account/settings", { token: user.token })
    expect(get.body).toEqual({ success: true, data: { email_notifications: true, telegram_notifications: false } })
    const put = await app.put("/v1/account/settings", { token: user.token, body: { email_notifications: false } })
    expect(put.status).toBe(200)
    expect(put.body).toEqual({ success: true, message: "Settings updated.", data: { email_notifications: false, telegram_notifications: false } })
    const me = await client(user.token)
    expect(await ok(me.accounts.settings())).toEqual({ email_notifications: false, telegram_notifications: false })
    const back = await ok(me.accounts.updateSettings({ payload: { email_notifications: true } }))
    expect(back).toEqual({ message: "Settings updated.", data: { email_notifications: true, telegram_notifications: false } })
  })

  test("a non-boolean is 422", async () => {
    const user = await register(app)
    const res = await app.put("/v1/account/settings", { token: user.token, body: { email_notifications: "yes" } })
    expect(res.status).toBe(422)
    expect(res.body.errors.email_notifications).toEqual(["The email notifications field must be true or false."])
  })
})

describe("delete account [D25]", () => {
  test("a wrong or missing password is 422 errors.password; nothing is deleted", async () => {
    const user = await register(app)
    const wrong = await app.del("/v1/account", { token: user.token, body: { password: "Not-The-Password-1" } })
    expect(wrong.status).toBe(422)
    expect(wrong.body.errors).toEqual({ password: ["The password is incorrect."] })
    const missing = await app.del("/v1/account", { token: user.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors.password).toEqual(["The password field is required."])
    const me = await client(user.token)
    expect<number>((await ok(me.accounts.user())).id).toBe(user.id)
  })

  test("deletes the user and everything of it in one go; invoices are kept detached; the e-mail is free at once", async () => {
    const user = await register(app)
    const keep = await register(app)
    const me = await client(user.token)
    await ok(me.accounts.updateSettings({ payload: { email_notifications: false } }))
    // a service, an invoice, usage, a ticket with a reply, a VPN peer and credentials
    const [plan] = await app.sql<{ id: number }>`insert into plans (name) values ('Basic') returning id`
    const [cycle] = await app.sql<{ id: number }>`
      insert into billing_cycles (plan_id, name, duration_days, price, currency)
      values (${plan!.id}, 'Monthly', 30, '9.99', 'EUR') returning id`
    const [service] = await app.sql<{ id: number }>`
      insert into services (user_id, plan_id, cycle_id, status, expires_at)
      values (${user.id}, ${plan!.id}, ${cycle!.id}, 'active', now() + interval '30 days') returning id`
    const [invoice] = await app.sql<{ id: number }>`
      insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, due_date, paid_at)
      values (${user.id}, ${service!.id}, ${plan!.id}, ${cycle!.id}, '9.99', 'EUR', 'paid', now(), now()) returning id`
    await app.sql`insert into usage_records (service_id, period, rx_bytes, tx_bytes) values (${service!.id}, '2026-01-01', 10, 20)`
    const [ticket] = await app.sql<{ id: number }>`insert into tickets (user_id, subject) values (${user.id}, 'Help') returning id`
    await app.sql`insert into ticket_replies (ticket_id, author_id, message) values (${ticket!.id}, ${user.id}, 'Hello')`
    const [server] = await app.sql<{ id: number }>`
      insert into servers (name, country, city, protocol, ip, port, node_token_hash)
      values ('de-1', 'DE', 'Berlin', 'wireguard', '192.0.2.1', 51820, ${`hash-${user.id}`}) returning id`
    await app.sql`
      insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address)
      values (${user.id}, ${server!.id}, ${`pk-${user.id}`}, 'sealed', '10.66.0.2')`
    await app.sql`
      insert into vpn_credentials (user_id, username, secret_enc, secret_hash)
      values (${user.id}, ${`vpn-${user.id}`}, 'sealed', 'hash')`

    expect(typeof (await ok(me.accounts.deleteAccount({ payload: { password: PASSWORD } })))).toBe("string")

    const left = await app.sql<Record<string, number>>`
      select
        (select count(*)::int from users where id = ${user.id}) as users,
        (select count(*)::int from access_tokens where user_id = ${user.id}) as tokens,
        (select count(*)::int from mail_tokens where user_id = ${user.id}) as mail_tokens,
        (select count(*)::int from user_settings where user_id = ${user.id}) as settings,
        (select count(*)::int from services where user_id = ${user.id}) as services,
        (select count(*)::int from usage_records where service_id = ${service!.id}) as usage,
        (select count(*)::int from tickets where user_id = ${user.id}) as tickets,
        (select count(*)::int from ticket_replies where ticket_id = ${ticket!.id}) as replies,
        (select count(*)::int from wireguard_peers where user_id = ${user.id}) as peers,
        (select count(*)::int from vpn_credentials where user_id = ${user.id}) as credentials`
    expect(left[0]).toEqual({
      users: 0,
      tokens: 0,
      mail_tokens: 0,
      settings: 0,
      services: 0,
      usage: 0,
      tickets: 0,
      replies: 0,
      peers: 0,
      credentials: 0
    })
    const [kept] = await app.sql<{ user_id: number | null; service_id: number | null; amount: string }>`
      select user_id, service_id, amount from invoices where id = ${invoice!.id}`
    expect(kept).toEqual({ user_id: null, service_id: null, amount: "9.99" })

    expect((await fails(me.accounts.user()))._tag).toBe("Unauthenticated")
    const keeper = await client(keep.token)
    expect<number>((await ok(keeper.accounts.user())).id).toBe(keep.id)
    await settle()
    const anonymous = await client()
    const again = await ok(anonymous.accounts.register({ payload: { name: "Again", email: user.email, password: PASSWORD, password_confirmation: PASSWORD } }))
    expect(again.user.email).toBe(user.email)
  })
})
