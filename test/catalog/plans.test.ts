import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { catalogAdmin } from "./helpers.ts"

// [D31] the public catalogue: active plans only, cycles, plan detail with cycles.
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
let basic: { id: number }
let pro: { id: number }
let hidden: { id: number }
let monthly: { id: number }
let yearly: { id: number }
let hiddenCycle: { id: number }

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  basic = await admin.createPlan({ name: "Basic", description: "Starter", bandwidth_limit_gb: 100, speed_limit_mbps: 50, trial_days: 7 })
  pro = await admin.createPlan({ name: "Pro", description: "Unlimited", bandwidth_limit_gb: 0, speed_limit_mbps: null, trial_days: 0 })
  hidden = await admin.createPlan({ name: "Legacy", is_active: false })
  monthly = await admin.createCycle(basic.id, { name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" })
  yearly = await admin.createCycle(basic.id, { name: "Yearly", duration_days: 365, price: 99.9, currency: "usd" })
  await admin.createCycle(pro.id, { name: "Monthly", duration_days: 30, price: "19", currency: "EUR" })
  hiddenCycle = await admin.createCycle(hidden.id, { name: "Monthly", duration_days: 30, price: "5.00", currency: "USD" })
})
afterAll(() => app.dispose())

describe("GET /v1/plans [D31]", () => {
  test("lists active plans only, ordered by id, with exactly the spec's Plan fields", async () => {
    const res = await app.get("/v1/plans")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: [
        {
          id: basic.id,
          name: "Basic",
          description: "Starter",
          bandwidth_limit_gb: 100,
          speed_limit_mbps: 50,
          trial_days: 7,
          device_limit: 5,
          usage_reset: "monthly",
          quota_action: "suspend",
          throttle_mbps: null
        },
        {
          id: pro.id,
          name: "Pro",
          description: "Unlimited",
          bandwidth_limit_gb: 0,
          speed_limit_mbps: null,
          trial_days: 0,
          device_limit: 5,
          usage_reset: "monthly",
          quota_action: "suspend",
          throttle_mbps: null
        }
      ]
    })
  })

  test("needs no token", async () => {
    const res = await app.get("/v1/plans", { token: "1|garbage" })
    expect(res.status).toBe(200)
  })
})

describe("GET /v1/plans/{plan} [D31]", () => {
  test("returns the Plan plus its cycles, prices as two-decimal strings", async () => {
    const res = await app.get(`/v1/plans/${basic.id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: basic.id,
        name: "Basic",
        description: "Starter",
        bandwidth_limit_gb: 100,
        speed_limit_mbps: 50,
        trial_days: 7,
        device_limit: 5,
        usage_reset: "monthly",
        quota_action: "suspend",
        throttle_mbps: null,
        cycles: [
          { id: monthly.id, name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" },
          { id: yearly.id, name: "Yearly", duration_days: 365, price: "99.90", currency: "USD" }
        ]
      }
    })
  })

  test("an inactive plan is 404", async () => {
    const res = await app.get(`/v1/plans/${hidden.id}`)
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
  })

  test("an unknown or impossible id is 404", async () => {
    for (const id of ["999999", "0", "abc", "99999999999"]) {
      const res = await app.get(`/v1/plans/${id}`)
      expect(res.status).toBe(404)
      expect(res.body.message).toBe("Resource not found.")
    }
  })
})

describe("GET /v1/plans/{plan}/cycles", () => {
  test("returns the plan's cycles as an array of Billing cycle", async () => {
    const res = await app.get(`/v1/plans/${basic.id}/cycles`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: [
        { id: monthly.id, name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" },
        { id: yearly.id, name: "Yearly", duration_days: 365, price: "99.90", currency: "USD" }
      ]
    })
  })

  test("a plan with no cycles is an empty array", async () => {
    const empty = await admin.createPlan({ name: "Empty" })
    const res = await app.get(`/v1/plans/${empty.id}/cycles`)
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual([])
  })

  test("an inactive or unknown plan is 404", async () => {
    expect((await app.get(`/v1/plans/${hidden.id}/cycles`)).status).toBe(404)
    expect((await app.get(`/v1/plans/999999/cycles`)).status).toBe(404)
  })
})

describe("GET /v1/plan/cycles/{cycle} [D31]", () => {
  test("returns the Billing cycle plus plan {id, name}", async () => {
    const res = await app.get(`/v1/plan/cycles/${yearly.id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: yearly.id,
        name: "Yearly",
        duration_days: 365,
        price: "99.90",
        currency: "USD",
        plan: { id: basic.id, name: "Basic" }
      }
    })
  })

  test("a cycle of an inactive plan, or an unknown cycle, is 404", async () => {
    expect((await app.get(`/v1/plan/cycles/${hiddenCycle.id}`)).status).toBe(404)
    const res = await app.get(`/v1/plan/cycles/999999`)
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
    expect((await app.get(`/v1/plan/cycles/x1`)).status).toBe(404)
  })

  test("a plan deactivated later disappears from the list and its detail, cycles and cycle 404", async () => {
    const temp = await admin.createPlan({ name: "Temporary" })
    const c = await admin.createCycle(temp.id)
    expect((await app.get(`/v1/plan/cycles/${c.id}`)).status).toBe(200)
    const off = await app.put(`/v1/admin/plans/${temp.id}`, { token: admin.token, body: { is_active: false } })
    expect(off.status).toBe(200)
    expect((await app.get("/v1/plans")).body.data.map((p: { id: number }) => p.id)).not.toContain(temp.id)
    expect((await app.get(`/v1/plans/${temp.id}`)).status).toBe(404)
    expect((await app.get(`/v1/plans/${temp.id}/cycles`)).status).toBe(404)
    expect((await app.get(`/v1/plan/cycles/${c.id}`)).status).toBe(404)
  })
})
