import { afterAll, beforeAll, expect, test } from "bun:test"
import { anyAddress } from "../accounts/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"

// The audit room through the typed client (issue 24): a user's own activity, and the admin's
// search of the audit log by action and resource ([D99] [D100]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("the user's activity: sign-in and an api key, newest first [D99] [D100]", async () => {
  const user = await app.createUser()
  const address = anyAddress()
  const login = await ok((await typedClient(app, { headers: address })).accounts.login({ payload: { email: user.email, password: user.password } }))
  const me = await typedClient(app, { token: login.token })
  await ok(me.accounts.createApiKey({ payload: { name: "bot", scopes: ["read"] } }))

  const page = await ok(me.audit.activity({ urlParams: {} }))
  expect(page.data.map((event) => event.event)).toEqual(["api_key_created", "sign_in"])
  expect(page.data[1]).toMatchObject({ event: "sign_in", via: "password", ip: address["x-forwarded-for"] })
  expect(page.data[1]!.created_at).toBeInstanceOf(Date)
  expect(page.meta).toEqual({ current_page: 1, last_page: 1, per_page: 15, total: 2 })
})

test("admin search: an admin write is found by action and resource; a user is refused [D70] [D100]", async () => {
  const adminUser = await app.createUser({ role: "admin" })
  const admin = await typedClient(app, { token: adminUser.token })
  const plan = await ok(admin.catalogAdmin.createPlan({ payload: { name: "Audited" } }))
  await ok(admin.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { description: "audited" } }))

  const found = await ok(admin.auditAdmin.search({ urlParams: { action: "PUT /v1/admin/plans/:plan", resource: `plan:${plan.id}` } }))
  expect(found.data.map((row) => ({ action: row.action, resource: row.resource, actor_id: row.actor_id }))).toEqual([
    { action: "PUT /v1/admin/plans/:plan", resource: `plan:${plan.id}`, actor_id: adminUser.id }
  ])
  expect(found.meta.total).toBe(1)

  const byActor = await ok(admin.auditAdmin.search({ urlParams: { actor: adminUser.id } }))
  expect(byActor.data.map((row) => row.action)).toEqual(["PUT /v1/admin/plans/:plan", "POST /v1/admin/plans"])

  const user = await typedClient(app, { token: (await app.createUser()).token })
  expect((await fails(user.auditAdmin.search({ urlParams: {} })))._tag).toBe("Forbidden")
})
