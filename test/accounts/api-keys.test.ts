import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { sha256Hex } from "../../src/platform/Crypto.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D98] API keys: shown once, stored hashed, scoped, expiring, revocable; never what only a person does.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const FORBIDDEN = { success: false, message: "Forbidden." }
const UNAUTHENTICATED = { success: false, message: "Unauthenticated." }

/** the typed client of one bearer credential (a token or an API key) */
const as = (token: string) => typedClient(app, { token })

const newKey = async (token: string, payload: Parameters<TypedClient["accounts"]["createApiKey"]>[0]["payload"]) => {
  const owner = await as(token)
  return ok(owner.accounts.createApiKey({ payload }))
}

describe("creating and listing [D98]", () => {
  test("201 {id, name, scopes, expires_at, key}; key is vpk_<id>_<secret>, stored only as a SHA-256; never cached", async () => {
    const user = await app.createUser()
    const expires = new Date(app.clock.get().getTime() + 30 * 86_400_000).toISOString()
    const res = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "CI bot", scopes: ["read", "write"], expires_at: expires } })
    expect(res.status).toBe(201)
    expect(res.headers.get("cache-control")).toBe("no-store")
    const data = res.body.data
    expect(Object.keys(data).sort()).toEqual(["expires_at", "id", "key", "name", "scopes"])
    expect(data.name).toBe("CI bot")
    expect(data.scopes).toEqual(["read", "write"])
    expect(data.expires_at).toBe(expires)
    const match = /^vpk_(\d+)_([A-Za-z0-9]{40})$/.exec(data.key)
    expect(match?.[1]).toBe(String(data.id))
    const rows = await app.sql<{ secret_hash: string; row: string }>`select secret_hash, row_to_json(k)::text as row from api_keys k where id = ${data.id}`
    expect(rows[0]!.secret_hash).toBe(sha256Hex(match![2]!))
    expect(rows[0]!.row).not.toContain(match![2]!)

    const list = await app.get("/v1/account/api-keys", { token: user.token })
    expect(list.status).toBe(200)
    expect(list.body.data).toEqual([
      { id: data.id, name: "CI bot", scopes: ["read", "write"], created_at: app.clock.get().toISOString(), last_used_at: null, expires_at: expires }
    ])
    expect(list.text).not.toContain(match![2]!)

    // a use is seen in last_used_at
    const viaKey = await as(data.key)
    expect((await ok(viaKey.accounts.user())).id).toBe(user.id)
    const me = await as(user.token)
    const after = await ok(me.accounts.listApiKeys())
    expect(after[0]!.last_used_at).toEqual(app.clock.get())
  })

  test("invalid input is 422 per field: name, scopes (missing, empty, unknown), expires_at (not a date, in the past)", async () => {
    const user = await app.createUser()
    const bad = await app.post("/v1/account/api-keys", { token: user.token, body: {} })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["name", "scopes"])
    const unknown = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "x", scopes: ["read", "root"] } })
    expect(unknown.status).toBe(422)
    expect(unknown.body.errors.scopes).toEqual(["The selected scopes is invalid."])
    const empty = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "x", scopes: [] } })
    expect(empty.body.errors.scopes).toEqual(["The scopes field is required."])
    const notDate = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "x", scopes: ["read"], expires_at: "soon" } })
    expect(notDate.status).toBe(422)
    expect(notDate.body.errors.expires_at).toEqual(["The expires at field must be a valid date."])
    const past = await app.post("/v1/account/api-keys", {
      token: user.token,
      body: { name: "x", scopes: ["read"], expires_at: new Date(app.clock.get().getTime() - 1000).toISOString() }
    })
    expect(past.status).toBe(422)
    expect(Object.keys(past.body.errors)).toEqual(["expires_at"])
    expect((await app.sql`select id from api_keys where user_id = ${user.id}`).length).toBe(0)
  })

  test("the admin scopes only for an admin owner: 422 errors.scopes for a user", async () => {
    const user = await app.createUser()
    for (const scope of ["admin:read", "admin:write"]) {
      const res = await app.post("/v1/account/api-keys", { token: user.token, body: { name: "x", scopes: ["read", scope] } })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["scopes"])
    }
    const admin = await app.createUser({ role: "admin" })
    await newKey(admin.token, { name: "ops", scopes: ["admin:read", "admin:write"] })
  })
})

describe("scopes [D98]", () => {
  test("read: every GET of the owner, no other method (403 Forbidden.); write: the other routes, no GET", async () => {
    const user = await app.createUser()
    const read = await newKey(user.token, { name: "r", scopes: ["read"] })
    const write = await newKey(user.token, { name: "w", scopes: ["write"] })
    const reader = await as(read.key)
    expect((await ok(reader.accounts.user())).id).toBe(user.id)
    await ok(reader.accounts.settings())
    const put = await app.put("/v1/account/settings", { token: read.key, body: { email_notifications: false } })
    expect(put.status).toBe(403)
    expect(put.body).toEqual(FORBIDDEN)
    const get = await app.get("/v1/user", { token: write.key })
    expect(get.status).toBe(403)
    expect(get.body).toEqual(FORBIDDEN)
    const writer = await as(write.key)
    const written = await ok(writer.accounts.updateSettings({ payload: { email_notifications: false } }))
    expect(written.data).toEqual({ email_notifications: false, telegram_notifications: false })
  })

  test("admin routes need admin:read (GET) or admin:write (others); read/write keys of an admin do not reach them", async () => {
    const admin = await app.createUser({ role: "admin" })
    const target = await app.createUser()
    const all = await newKey(admin.token, { name: "all user", scopes: ["read", "write"] })
    const adminRead = await newKey(admin.token, { name: "ar", scopes: ["admin:read"] })
    const adminWrite = await newKey(admin.token, { name: "aw", scopes: ["admin:write"] })
    for (const key of [all.key, adminWrite.key]) {
      const res = await app.get("/v1/admin/users", { token: key })
      expect(res.status).toBe(403)
      expect(res.body).toEqual(FORBIDDEN)
    }
    const adminReader = await as(adminRead.key)
    await ok(adminReader.accountsAdmin.listUsers({ urlParams: {} }))
    for (const key of [all.key, adminRead.key]) {
      const res = await app.put(`/v1/admin/users/${target.id}`, { token: key, body: { status: 1 } })
      expect(res.status).toBe(403)
    }
    const adminWriter = await as(adminWrite.key)
    expect((await ok(adminWriter.accountsAdmin.updateUser({ path: { user: target.id }, payload: { status: 1 } }))).id).toBe(target.id)
    // admin scopes reach no user route
    expect((await app.get("/v1/user", { token: adminRead.key })).status).toBe(403)
  })

  test("a demoted owner's admin key reaches no admin route (403)", async () => {
    const admin = await app.createUser({ role: "admin" })
    await app.createUser({ role: "admin" })
    const key = await newKey(admin.token, { name: "ar", scopes: ["admin:read"] })
    await app.sql`update users set role = 'user' where id = ${admin.id}`
    expect((await app.get("/v1/admin/users", { token: key.key })).status).toBe(403)
  })

  test("a key never signs out, changes the password, touches 2FA, deletes the account, or makes, lists or revokes keys or sessions: 403", async () => {
    const user = await app.createUser()
    const key = await newKey(user.token, { name: "everything", scopes: ["read", "write"] })
    const other = await newKey(user.token, { name: "other", scopes: ["read"] })
    const session = (await app.sql<{ id: number }>`select id from access_tokens where user_id = ${user.id}`)[0]!.id
    const attempts: ReadonlyArray<readonly [string, string, unknown?]> = [
      ["POST", "/v1/auth/logout"],
      ["POST", "/v1/auth/logout-all"],
      ["PUT", "/v1/account/password", { current_password: user.password, password: "An0ther-Passw0rd!", password_confirmation: "An0ther-Passw0rd!" }],
      ["POST", "/v1/account/2fa"],
      ["POST", "/v1/account/2fa/confirm", { code: "123456" }],
      ["DELETE", "/v1/account/2fa", { password: user.password, code: "123456" }],
      ["DELETE", "/v1/account", { password: user.password }],
      ["POST", "/v1/account/api-keys", { name: "child", scopes: ["read"] }],
      ["GET", "/v1/account/api-keys"],
      ["DELETE", `/v1/account/api-keys/${other.id}`],
      ["GET", "/v1/account/sessions"],
      ["DELETE", `/v1/account/sessions/${session}`]
    ]
    for (const [method, path, body] of attempts) {
      const res = await app.request(method, path, { token: key.key, ...(body === undefined ? {} : { body }) })
      expect(`${method} ${path} ${res.status} ${JSON.stringify(res.body)}`).toBe(`${method} ${path} 403 ${JSON.stringify(FORBIDDEN)}`)
    }
    // nothing happened: the session, the other key and the user are there; two keys, no third
    const me = await as(user.token)
    expect((await ok(me.accounts.user())).id).toBe(user.id)
    expect((await app.sql`select id from api_keys where user_id = ${user.id}`).length).toBe(2)
  })
})

describe("expiry and revocation [D98]", () => {
  test("an expired key is 401 like a bad token", async () => {
    const user = await app.createUser()
    const key = await newKey(user.token, { name: "short", scopes: ["read"], expires_at: new Date(app.clock.get().getTime() + 3_600_000) })
    const viaKey = await as(key.key)
    expect((await ok(viaKey.accounts.user())).id).toBe(user.id)
    app.clock.advance(3_600_000)
    const res = await app.get("/v1/user", { token: key.key })
    expect(res.status).toBe(401)
    expect(res.body).toEqual(UNAUTHENTICATED)
  })

  test("DELETE revokes (then 401); another user's key is 404 and keeps working; a wrong secret is 401", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    const key = await newKey(user.token, { name: "k", scopes: ["read"] })
    const theirs = await newKey(other.token, { name: "theirs", scopes: ["read"] })
    const foreign = await app.del(`/v1/account/api-keys/${theirs.id}`, { token: user.token })
    expect(foreign.status).toBe(404)
    expect(foreign.body).toEqual({ success: false, message: "Resource not found." })
    const viaTheirs = await as(theirs.key)
    expect((await ok(viaTheirs.accounts.user())).id).toBe(other.id)
    const forged = `vpk_${key.id}_${"A".repeat(40)}`
    expect((await app.get("/v1/user", { token: forged })).status).toBe(401)
    const me = await as(user.token)
    expect(await ok(me.accounts.revokeApiKey({ path: { key: key.id } }))).toBe("API key revoked.")
    expect((await app.get("/v1/user", { token: key.key })).status).toBe(401)
    expect((await app.del(`/v1/account/api-keys/${key.id}`, { token: user.token })).status).toBe(404)
  })

  test("a disabled owner's key is 401", async () => {
    const user = await app.createUser()
    const key = await newKey(user.token, { name: "k", scopes: ["read"] })
    await app.sql`update users set status = 0 where id = ${user.id}`
    expect((await app.get("/v1/user", { token: key.key })).status).toBe(401)
  })
})

describe("the bearer check shared by tokens and API keys (Crypto.matchSecret) [D4] [D98]", () => {
  test("an id past int4, a secret of the wrong length or shape, another row's secret: 401 in the envelope, never a 5xx", async () => {
    const user = await app.createUser()
    const key = await newKey(user.token, { name: "edge", scopes: ["read"] })
    const tokenSecret = user.token.split("|")[1]!
    const keySecret = key.key.split("_")[2]!
    const other = await app.createUser()
    const bad = [
      `9999999999|${tokenSecret}`, // past int4: refused before any query
      `2147483648|${tokenSecret}`,
      `vpk_9999999999_${keySecret}`,
      `${user.token}x`,
      `vpk_${key.id}_${keySecret.slice(1)}`,
      `${other.token.split("|")[0]}|${tokenSecret}`, // a live row, another secret
      `vpk_${key.id}_${tokenSecret}`
    ]
    for (const token of bad) {
      const res = await app.get("/v1/user", { token })
      expect(res.status).toBe(401)
      expect(res.body).toEqual(UNAUTHENTICATED)
    }
    // the real ones still pass
    const me = await as(user.token)
    expect((await ok(me.accounts.user())).id).toBe(user.id)
    const viaKey = await as(key.key)
    expect((await ok(viaKey.accounts.user())).id).toBe(user.id)
  })
})
