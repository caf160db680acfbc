import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { days, servicesFixtures } from "./services-fixtures.ts"

// [D34] [D11]: the caller's services, the current one, one by id, auto-renew.
let app: TestApp
let fx: ReturnType<typeof servicesFixtures>
let planId: number
let cycleId: number

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
  planId = await fx.plan({ name: "Pro", bandwidth: 500, speed: 100 })
  cycleId = await fx.cycle(planId, { name: "Quarterly", days: 90, price: "24.5", currency: "EUR" })
})
afterAll(() => app.dispose())

const now = () => app.clock.get()

describe("GET /v1/services", () => {
  test("401 without a token", async () => {
    const res = await app.get("/v1/services")
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
  })

  test("the caller's services only, newest first, in the list shape", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    const older = await fx.service({
      userId: user.id,
      planId,
      cycleId,
      status: "expired",
      startsAt: days(now(), -100),
      expiresAt: days(now(), -10),
      createdAt: days(now(), -100),
      autoRenew: false
    })
    const newer = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 20), createdAt: days(now(), -1) })
    await fx.service({ userId: other.id, planId, cycleId, expiresAt: days(now(), 20) })

    const res = await app.get("/v1/services", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(res.body.data.map((s: { id: number }) => s.id)).toEqual([newer, older])
    expect(res.body.data[1]).toEqual({
      id: older,
      plan: { id: planId, name: "Pro" },
      cycle: { name: "Quarterly", duration_days: 90, price: "24.50" },
      status: "expired",
      starts_at: days(now(), -100).toISOString(),
      expires_at: days(now(), -10).toISOString(),
      auto_renew: false,
      // [D111] [D108]: list items carry them too
      grace_until: null,
      cancel_at: null,
      scheduled_change: null
    })
    expect(res.body.meta).toBeUndefined()
  })

  test("an empty list for a user without services", async () => {
    const user = await app.createUser()
    const res = await app.get("/v1/services", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, data: [] })
  })
})

describe("GET /v1/services/current [D34]", () => {
  test("404 Resource not found. without any service", async () => {
    const user = await app.createUser()
    const res = await app.get("/v1/services/current", { token: user.token })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
  })

  test("expired, cancelled, pending or past-expiry services are not current", async () => {
    const user = await app.createUser()
    await fx.service({ userId: user.id, planId, cycleId, status: "expired", expiresAt: days(now(), 10) })
    await fx.service({ userId: user.id, planId, cycleId, status: "cancelled", expiresAt: days(now(), 10) })
    await fx.service({ userId: user.id, planId, cycleId, status: "pending", expiresAt: days(now(), 10) })
    // still marked active but past its expiry (the job has not run yet)
    await fx.service({ userId: user.id, planId, cycleId, status: "active", expiresAt: days(now(), -1) })
    const res = await app.get("/v1/services/current", { token: user.token })
    expect(res.status).toBe(404)
  })

  test("the newest active or suspended service; suspended counts", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const active = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30), createdAt: days(now(), -5) })
    expect((await ok(me.services.currentService())).id).toBe(active)

    const suspended = await fx.service({
      userId: user.id,
      planId,
      cycleId,
      status: "suspended",
      expiresAt: days(now(), 10),
      createdAt: days(now(), -1)
    })
    // a newer expired one does not hide them
    await fx.service({ userId: user.id, planId, cycleId, status: "expired", expiresAt: days(now(), 10), createdAt: now() })
    // the client decodes the `{success: true, data}` envelope only
    expect(await ok(me.services.currentService())).toEqual({
      id: suspended,
      plan: { id: planId, name: "Pro", bandwidth_limit_gb: 500, speed_limit_mbps: 100 },
      cycle: { id: cycleId, name: "Quarterly", duration_days: 90, price: "24.50", currency: "EUR" },
      status: "suspended",
      starts_at: now().toISOString(),
      expires_at: days(now(), 10).toISOString(),
      auto_renew: true,
      grace_until: null,
      cancel_at: null,
      scheduled_change: null
    })
  })

  test("a service stops being current once the clock passes its expiry", async () => {
    const user = await app.createUser()
    await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 2) })
    const me = await typedClient(app, { token: user.token })
    await ok(me.services.currentService())
    app.clock.advance(3 * 86_400_000)
    try {
      expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
    } finally {
      app.clock.advance(-3 * 86_400_000)
    }
  })

  test("another user's service is never the caller's current", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    await fx.service({ userId: other.id, planId, cycleId, expiresAt: days(now(), 30) })
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
  })
})

describe("GET /v1/services/{service} [D34] [D11]", () => {
  test("every Service field", async () => {
    const unlimited = await fx.plan({ name: "Unlimited", bandwidth: 0, speed: null })
    const monthly = await fx.cycle(unlimited, { name: "Monthly", days: 30, price: "5.00", currency: "USD" })
    const user = await app.createUser()
    const id = await fx.service({
      userId: user.id,
      planId: unlimited,
      cycleId: monthly,
      status: "pending",
      startsAt: days(now(), -1),
      expiresAt: days(now(), 29),
      autoRenew: false
    })
    const res = await app.get(`/v1/services/${id}`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        id,
        plan: { id: unlimited, name: "Unlimited", bandwidth_limit_gb: 0, speed_limit_mbps: null },
        cycle: { id: monthly, name: "Monthly", duration_days: 30, price: "5.00", currency: "USD" },
        status: "pending",
        starts_at: days(now(), -1).toISOString(),
        expires_at: days(now(), 29).toISOString(),
        auto_renew: false,
        grace_until: null,
        cancel_at: null,
        scheduled_change: null
      }
    })
  })

  test("another user's service, an unknown id and an impossible id are 404", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    const theirs = await fx.service({ userId: other.id, planId, cycleId, expiresAt: days(now(), 30) })
    for (const path of [`/v1/services/${theirs}`, "/v1/services/999999", "/v1/services/abc", "/v1/services/0"]) {
      const res = await app.get(path, { token: user.token })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
    const them = await typedClient(app, { token: other.token })
    expect((await ok(them.services.getService({ path: { service: theirs } }))).id).toBe(theirs)
  })

  test("401 without a token", async () => {
    expect((await app.get("/v1/services/1")).status).toBe(401)
  })
})

describe("PUT /v1/services/{service}/auto-renew", () => {
  test("toggles only the flag: 200 with a message and data {auto_renew}", async () => {
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, status: "suspended", expiresAt: days(now(), 30) })
    const me = await typedClient(app, { token: user.token })
    const before = await ok(me.services.getService({ path: { service: id } }))

    // the client decodes the declared 200 `{success: true, message, data}` only
    const off = await ok(me.services.setAutoRenew({ path: { service: id }, payload: { auto_renew: false } }))
    expect(off).toEqual({ message: "Auto-renew updated.", data: { auto_renew: false } })
    const after = await ok(me.services.getService({ path: { service: id } }))
    expect(after).toEqual({ ...before, auto_renew: false })
    expect(after.status).toBe("suspended")

    const on = await ok(me.services.setAutoRenew({ path: { service: id }, payload: { auto_renew: true } }))
    expect(on.data).toEqual({ auto_renew: true })
    expect(await ok(me.services.getService({ path: { service: id } }))).toEqual(before)
  })

  test("another user's service is 404 and stays unchanged", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    const theirs = await fx.service({ userId: other.id, planId, cycleId, expiresAt: days(now(), 30) })
    const res = await app.put(`/v1/services/${theirs}/auto-renew`, { token: user.token, body: { auto_renew: false } })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
    const [row] = await app.sql<{ auto_renew: boolean }>`select auto_renew from services where id = ${theirs}`
    expect(row!.auto_renew).toBe(true)
  })

  test("422 when auto_renew is missing or not a boolean", async () => {
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30) })
    const missing = await app.put(`/v1/services/${id}/auto-renew`, { token: user.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { auto_renew: ["The auto renew field is required."] }
    })
    const wrong = await app.put(`/v1/services/${id}/auto-renew`, { token: user.token, body: { auto_renew: "no" } })
    expect(wrong.status).toBe(422)
    expect(wrong.body.errors).toEqual({ auto_renew: ["The auto renew field must be true or false."] })
  })

  test("401 without a token", async () => {
    expect((await app.put("/v1/services/1/auto-renew", { body: { auto_renew: true } })).status).toBe(401)
  })
})
