import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { freshAddress } from "./helpers.ts"

// The catalogue's main flows through the typed client (issue 24): an admin builds a plan with a
// cycle and a promo ([D70]), the public reads them ([D31]) and validates the promo ([D32] [D33]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("admin creates and updates a plan with a cycle; the public lists and reads it [D31] [D70]", async () => {
  const admin = await app.createUser({ role: "admin" })
  const client = await typedClient(app, { token: admin.token })
  const plan = await ok(
    client.catalogAdmin.createPlan({
      payload: { name: "Typed Plan", description: "Through the typed client", bandwidth_limit_gb: 250, speed_limit_mbps: 100, trial_days: 3, device_limit: 4 }
    })
  )
  expect(plan).toMatchObject({ name: "Typed Plan", bandwidth_limit_gb: 250, speed_limit_mbps: 100, trial_days: 3, device_limit: 4, is_active: true })

  const cycle = await ok(
    client.catalogAdmin.createCycle({
      path: { plan: plan.id },
      payload: { name: "Quarterly", duration_days: 90, price: 2450, currency: "eur" }
    })
  )
  expect(cycle).toEqual({ id: cycle.id, name: "Quarterly", duration_days: 90, price: "24.50", currency: "EUR" })

  const renamed = await ok(client.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { name: "Typed Plan Pro", bandwidth_limit_gb: 500 } }))
  expect(renamed).toMatchObject({ id: plan.id, name: "Typed Plan Pro", bandwidth_limit_gb: 500, speed_limit_mbps: 100 })

  const anonymous = await typedClient(app)
  const plans = await ok(anonymous.catalog.listPlans())
  const listed = plans.find((p) => p.id === plan.id)
  expect(listed).toMatchObject({ name: "Typed Plan Pro", bandwidth_limit_gb: 500, device_limit: 4 })
  expect(listed && "is_active" in listed).toBe(false)

  const detail = await ok(anonymous.catalog.getPlan({ path: { plan: plan.id } }))
  expect(detail.cycles).toEqual([cycle])
  expect(await ok(anonymous.catalog.listCycles({ path: { plan: plan.id } }))).toEqual([cycle])
  expect(await ok(anonymous.catalog.getCycle({ path: { cycle: cycle.id } }))).toEqual({ ...cycle, plan: { id: plan.id, name: "Typed Plan Pro" } })

  // deactivated: gone from the public catalogue, a 404 as its declared class
  await ok(client.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { is_active: false } }))
  expect((await ok(anonymous.catalog.listPlans())).map((p) => p.id)).not.toContain(plan.id)
  expect((await fails(anonymous.catalog.getPlan({ path: { plan: plan.id } })))._tag).toBe("NotFound")
})

test("admin creates a promo; validation gives the discounted price [D32] [D33]", async () => {
  const admin = await app.createUser({ role: "admin" })
  const client = await typedClient(app, { token: admin.token })
  const plan = await ok(client.catalogAdmin.createPlan({ payload: { name: "Promo Plan" } }))
  const cycle = await ok(
    client.catalogAdmin.createCycle({ path: { plan: plan.id }, payload: { name: "Monthly", duration_days: 30, price: 1000, currency: "USD" } })
  )
  const code = `TYPED${Date.now().toString(36).toUpperCase()}`
  const promo = await ok(client.catalogAdmin.createPromo({ payload: { code, type: "percentage", value: 2500, plan_ids: [plan.id] } }))
  expect(promo).toMatchObject({ code, type: "percentage", value: "25.00", plan_ids: [plan.id], expires_at: null })

  const anonymous = await typedClient(app, { headers: freshAddress() })
  const validation = await ok(anonymous.catalog.validatePromo({ payload: { code: code.toLowerCase(), plan_id: plan.id, cycle_id: cycle.id } }))
  expect(validation).toEqual({ code: code.toLowerCase(), type: "percentage", value: 25, original_price: "10.00", discounted_price: "7.50", currency: "USD" })
})

test("a user's token is refused the admin routes with the declared Forbidden [D70]", async () => {
  const user = await app.createUser()
  const client = await typedClient(app, { token: user.token })
  expect((await fails(client.catalogAdmin.createPlan({ payload: { name: "Nope" } })))._tag).toBe("Forbidden")
})
