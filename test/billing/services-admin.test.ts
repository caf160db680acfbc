import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { days, servicesFixtures } from "./services-fixtures.ts"

// [D70]: granting and changing services as an admin.
let app: TestApp
let fx: ReturnType<typeof servicesFixtures>
let admin: { id: number; token: string }
let boss: TypedClient
let planId: number
let cycleId: number

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
  admin = await app.createUser({ role: "admin" })
  boss = await typedClient(app, { token: admin.token })
  planId = await fx.plan({ name: "Pro", bandwidth: 500, speed: 100 })
  cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "9.99", currency: "USD" })
})
afterAll(() => app.dispose())

const now = () => app.clock.get()

/** a Pro Monthly service starting now, as the service answers show it; `fields` set the rest */
const proMonthly = (fields: { readonly id: number; readonly status: "active" | "suspended"; readonly auto_renew: boolean }) => ({
  id: fields.id,
  plan: { id: planId, name: "Pro", bandwidth_limit_gb: 500, speed_limit_mbps: 100 },
  cycle: { id: cycleId, name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" },
  status: fields.status,
  starts_at: now().toISOString(),
  expires_at: days(now(), 30).toISOString(),
  auto_renew: fields.auto_renew,
  grace_until: null,
  cancel_at: null,
  scheduled_change: null
})

describe("POST /v1/admin/users/{user}/services", () => {
  test("401 without a token, 403 Forbidden. for a user", async () => {
    const user = await app.createUser()
    const path = `/v1/admin/users/${user.id}/services`
    const anonymous = await app.post(path, { body: { plan_id: planId, cycle_id: cycleId } })
    expect(anonymous.status).toBe(401)
    expect(anonymous.body).toEqual({ success: false, message: "Unauthenticated." })
    const forbidden = await app.post(path, { token: user.token, body: { plan_id: planId, cycle_id: cycleId } })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body).toEqual({ success: false, message: "Forbidden." })
    const [counted] = await app.sql<{ count: number }>`select count(*)::int as count from services where user_id = ${user.id}`
    const count = counted!.count
    expect(count).toBe(0)
  })

  test("201 with defaults: starts now, expires after the cycle, active, auto-renew; the user sees it as current", async () => {
    const user = await app.createUser()
    // the typed client decodes only the declared 201 `{success: true, data}`
    const res = await ok(boss.servicesAdmin.grantService({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId } }))
    // [D124]: a granted service does not renew unless the admin says so
    expect(res).toEqual(proMonthly({ id: expect.any(Number), status: "active", auto_renew: false }))
    const me = await typedClient(app, { token: user.token })
    const current = await ok(me.services.currentService())
    expect(current).toEqual(res)
  })

  test("explicit status, timestamps and auto_renew; an inactive plan can be granted", async () => {
    const hidden = await fx.plan({ name: "Legacy", active: false })
    const hiddenCycle = await fx.cycle(hidden, { days: 7 })
    const user = await app.createUser()
    const res = await ok(
      boss.servicesAdmin.grantService({
        path: { user: user.id },
        payload: {
          plan_id: hidden,
          cycle_id: hiddenCycle,
          status: "suspended",
          starts_at: new Date("2026-01-01T00:00:00Z"),
          expires_at: new Date("2026-03-01T10:30:00.000Z"),
          auto_renew: false
        }
      })
    )
    expect(res).toMatchObject({
      plan: { id: hidden, name: "Legacy" },
      cycle: { id: hiddenCycle, duration_days: 7 },
      status: "suspended",
      starts_at: "2026-01-01T00:00:00.000Z",
      expires_at: "2026-03-01T10:30:00.000Z",
      auto_renew: false
    })
  })

  test("unknown user: 404", async () => {
    const res = await app.post("/v1/admin/users/999999/services", {
      token: admin.token,
      body: { plan_id: planId, cycle_id: cycleId }
    })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
  })

  test("422: missing fields, unknown plan or cycle, a cycle of another plan, a bad status or timestamp", async () => {
    const user = await app.createUser()
    const path = `/v1/admin/users/${user.id}/services`
    const missing = await app.post(path, { token: admin.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { plan_id: ["The plan id field is required."], cycle_id: ["The cycle id field is required."] }
    })

    const unknown = await app.post(path, { token: admin.token, body: { plan_id: 999999, cycle_id: 999999 } })
    expect(unknown.status).toBe(422)
    expect(unknown.body.errors).toEqual({
      plan_id: ["The selected plan id is invalid."],
      cycle_id: ["The selected cycle id is invalid."]
    })

    const otherPlan = await fx.plan({ name: "Other" })
    const mismatched = await app.post(path, { token: admin.token, body: { plan_id: otherPlan, cycle_id: cycleId } })
    expect(mismatched.status).toBe(422)
    expect(mismatched.body.errors).toEqual({ cycle_id: ["The selected cycle id is invalid."] })

    const badStatus = await app.post(path, { token: admin.token, body: { plan_id: planId, cycle_id: cycleId, status: "paused" } })
    expect(badStatus.status).toBe(422)
    expect(badStatus.body.errors).toEqual({ status: ["The selected status is invalid."] })

    const badDates = await app.post(path, {
      token: admin.token,
      body: { plan_id: planId, cycle_id: cycleId, starts_at: "yesterday", expires_at: 12 }
    })
    expect(badDates.status).toBe(422)
    expect(badDates.body.errors).toEqual({
      starts_at: ["The starts at field must be a valid date."],
      expires_at: ["The expires at field must be a valid date."]
    })

    const backwards = await app.post(path, {
      token: admin.token,
      body: { plan_id: planId, cycle_id: cycleId, starts_at: "2026-02-01T00:00:00Z", expires_at: "2026-01-01T00:00:00Z" }
    })
    expect(backwards.status).toBe(422)
    expect(backwards.body.errors).toEqual({ expires_at: ["The expires at field must be a date after starts at."] })

    const [counted] = await app.sql<{ count: number }>`select count(*)::int as count from services where user_id = ${user.id}`
    const count = counted!.count
    expect(count).toBe(0)
  })
})

describe("PUT /v1/admin/services/{service}", () => {
  test("401, 403 for a user, even on their own service", async () => {
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30) })
    expect((await app.put(`/v1/admin/services/${id}`, { body: { status: "active" } })).status).toBe(401)
    const forbidden = await app.put(`/v1/admin/services/${id}`, { token: user.token, body: { status: "active" } })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body).toEqual({ success: false, message: "Forbidden." })
  })

  test("200 Service: changes status and expiry, leaves the rest", async () => {
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30), autoRenew: false })
    // the typed client decodes only the declared 200 `{success: true, data}`
    const suspended = await ok(boss.servicesAdmin.updateService({ path: { service: id }, payload: { status: "suspended" } }))
    expect(suspended).toEqual(proMonthly({ id, status: "suspended", auto_renew: false }))

    const extended = await ok(boss.servicesAdmin.updateService({ path: { service: id }, payload: { expires_at: new Date("2026-06-01T00:00:00Z") } }))
    expect(extended.status).toBe("suspended")
    expect(extended.expires_at).toBe("2026-06-01T00:00:00.000Z")

    const cancelled = await ok(boss.servicesAdmin.updateService({ path: { service: id }, payload: { status: "cancelled" } }))
    expect(cancelled.status).toBe("cancelled")
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
  })

  test("unknown or impossible service: 404; bad fields: 422", async () => {
    for (const path of ["/v1/admin/services/999999", "/v1/admin/services/x"]) {
      const res = await app.put(path, { token: admin.token, body: { status: "active" } })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30) })
    const bad = await app.put(`/v1/admin/services/${id}`, {
      token: admin.token,
      body: { status: "gone", expires_at: "soon" }
    })
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({
      status: ["The selected status is invalid."],
      expires_at: ["The expires at field must be a valid date."]
    })
    const [row] = await app.sql<{ status: string }>`select status from services where id = ${id}`
    expect(row!.status).toBe("active")
  })
})
