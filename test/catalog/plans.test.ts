import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, type TypedClient, typedClient } from "../support/typed.ts"
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
/** anyone through the typed client of the contract */
let anyone: TypedClient

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  anyone = await typedClient(app)
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
    // the declared 200 answer, with a token that is no session
    const withGarbage = await typedClient(app, { token: "1|garbage" })
    expect((await ok(withGarbage.catalog.listPlans())).map((p): number => p.id)).toEqual([basic.id, pro.id])
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
    const empty = await ok(admin.client.catalogAdmin.createPlan({ payload: { name: "Empty" } }))
    expect(await ok(anyone.catalog.listCycles({ path: { plan: empty.id } }))).toEqual([])
  })

  test("an inactive or unknown plan is 404", async () => {
    expect((await fails(anyone.catalog.listCycles({ path: { plan: hidden.id } })))._tag).toBe("NotFound")
    expect((await fails(anyone.catalog.listCycles({ path: { plan: 999999 } })))._tag).toBe("NotFound")
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
    const staff = admin.client
    const temp = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Temporary" } }))
    const c = await ok(
      staff.catalogAdmin.createCycle({ path: { plan: temp.id }, payload: { name: "Monthly", duration_days: 30, price: 999, currency: "USD" } })
    )
    expect((await ok(anyone.catalog.getCycle({ path: { cycle: c.id } }))).plan).toEqual({ id: temp.id, name: "Temporary" })
    const off = await ok(staff.catalogAdmin.updatePlan({ path: { plan: temp.id }, payload: { is_active: false } }))
    expect(off.is_active).toBe(false)
    expect((await ok(anyone.catalog.listPlans())).map((p): number => p.id)).not.toContain(temp.id)
    expect((await fails(anyone.catalog.getPlan({ path: { plan: temp.id } })))._tag).toBe("NotFound")
    expect((await fails(anyone.catalog.listCycles({ path: { plan: temp.id } })))._tag).toBe("NotFound")
    expect((await fails(anyone.catalog.getCycle({ path: { cycle: c.id } })))._tag).toBe("NotFound")
  })
})
