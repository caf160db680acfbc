import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, type TypedClient, typedClient } from "../support/typed.ts"
import { catalogAdmin } from "./helpers.ts"

// [D70] admin catalogue: plans, cycles, promos; 401 without a token, 403 for non-admins.
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
let userToken: string
/** the admin, and anyone, through the typed client of the contract */
let staff: TypedClient
let anyone: TypedClient

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  staff = admin.client
  anyone = await typedClient(app)
  userToken = (await app.createUser()).token
})
afterAll(() => app.dispose())

const routes = (planId: number): ReadonlyArray<readonly [string, string, unknown]> => [
  ["POST", "/v1/admin/plans", { name: "X" }],
  ["PUT", `/v1/admin/plans/${planId}`, { name: "X" }],
  ["POST", `/v1/admin/plans/${planId}/cycles`, { name: "M", duration_days: 30, price: "1.00", currency: "USD" }],
  ["POST", "/v1/admin/promos", { code: "ADMINONLY", type: "fixed", value: 1 }]
]

describe("admin authentication [D70] [D11]", () => {
  test("every admin catalogue route is 401 without a token and 403 Forbidden. for a user", async () => {
    const plan = await admin.createPlan()
    for (const [method, path, body] of routes(plan.id)) {
      const anonymous = await app.request(method, path, { body })
      expect(anonymous.status).toBe(401)
      expect(anonymous.body).toEqual({ success: false, message: "Unauthenticated." })
      const user = await app.request(method, path, { body, token: userToken })
      expect(user.status).toBe(403)
      expect(user.body).toEqual({ success: false, message: "Forbidden." })
    }
    const [row] = await app.sql<{ n: number }>`select count(*)::int as n from promo_codes where code = 'ADMINONLY'`
    expect(row!.n).toBe(0)
  })

  test("authentication comes before validation: a bad body without a token is 401", async () => {
    const res = await app.post("/v1/admin/plans", { body: { name: 5 } })
    expect(res.status).toBe(401)
  })
})

describe("POST /v1/admin/plans", () => {
  test("201 with the Plan plus is_active", async () => {
    const res = await app.post("/v1/admin/plans", {
      token: admin.token,
      body: { name: "Family", description: "Five devices", bandwidth_limit_gb: 500, speed_limit_mbps: 200, trial_days: 3, is_active: false }
    })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        name: "Family",
        description: "Five devices",
        bandwidth_limit_gb: 500,
        speed_limit_mbps: 200,
        trial_days: 3,
        device_limit: 5,
        usage_reset: "monthly",
        quota_action: "suspend",
        throttle_mbps: null,
        is_active: false
      }
    })
  })

  test("optional fields default: no description, unlimited, no speed limit, no trial, active", async () => {
    // the declared 201 answer
    const plan = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Minimal" } }))
    expect(plan).toMatchObject({
      name: "Minimal",
      description: "",
      bandwidth_limit_gb: 0,
      speed_limit_mbps: null,
      trial_days: 0,
      device_limit: 5,
      usage_reset: "monthly",
      quota_action: "suspend",
      throttle_mbps: null,
      is_active: true
    })
  })

  test("invalid fields are 422 with every field", async () => {
    const res = await app.post("/v1/admin/plans", {
      token: admin.token,
      body: { name: "", bandwidth_limit_gb: -1, speed_limit_mbps: "fast", trial_days: 1.5, is_active: "yes" }
    })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({
      name: ["The name field is required."],
      bandwidth_limit_gb: ["The bandwidth limit gb field must be at least 0."],
      speed_limit_mbps: ["The speed limit mbps field must be an integer."],
      trial_days: ["The trial days field must be an integer."],
      is_active: ["The is active field must be true or false."]
    })
    const zero = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Z", speed_limit_mbps: 0 } })
    expect(zero.body.errors).toEqual({ speed_limit_mbps: ["The speed limit mbps field must be at least 1."] })
    const missing = await app.post("/v1/admin/plans", { token: admin.token, body: {} })
    expect(missing.body.errors).toEqual({ name: ["The name field is required."] })
  })
})

describe("plans carry device_limit [D90]", () => {
  test("default 5; set on create and update; 0 is unlimited; shown publicly; a negative or fractional one is 422", async () => {
    const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Devices", device_limit: 0 } }))
    expect(made.device_limit).toBe(0)
    const changed = await ok(staff.catalogAdmin.updatePlan({ path: { plan: made.id }, payload: { device_limit: 3 } }))
    expect(changed.device_limit).toBe(3)
    expect((await ok(anyone.catalog.getPlan({ path: { plan: made.id } }))).device_limit).toBe(3)
    const bad = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Bad", device_limit: -1 } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({ device_limit: ["The device limit field must be at least 0."] })
    const frac = await app.put(`/v1/admin/plans/${made.id}`, { token: admin.token, body: { device_limit: 1.5 } })
    expect(frac.status).toBe(422)
    expect(frac.body.errors).toEqual({ device_limit: ["The device limit field must be an integer."] })
  })
})

describe("PUT /v1/admin/plans/{plan}", () => {
  test("changes only the fields sent; null clears the speed limit", async () => {
    const plan = await admin.createPlan({ name: "Before", description: "Kept", speed_limit_mbps: 10, trial_days: 2 })
    const updated = await ok(staff.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { name: "After", speed_limit_mbps: null } }))
    expect<unknown>(updated).toEqual({
      id: plan.id,
      name: "After",
      description: "Kept",
      bandwidth_limit_gb: 100,
      speed_limit_mbps: null,
      trial_days: 2,
      device_limit: 5,
      usage_reset: "monthly",
      quota_action: "suspend",
      throttle_mbps: null,
      is_active: true
    })
    const pub = await ok(anyone.catalog.getPlan({ path: { plan: plan.id } }))
    expect(pub).toMatchObject({ name: "After", speed_limit_mbps: null })
  })

  test("an empty body changes nothing and answers the plan", async () => {
    const plan = await admin.createPlan({ name: "Same" })
    const same = await ok(staff.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: {} }))
    expect(same).toMatchObject({ id: plan.id, name: "Same" })
  })

  test("an unknown plan is 404; a bad field is 422", async () => {
    expect((await fails(staff.catalogAdmin.updatePlan({ path: { plan: 999999 }, payload: { name: "X" } })))._tag).toBe("NotFound")
    const plan = await admin.createPlan()
    const bad = await app.put(`/v1/admin/plans/${plan.id}`, { token: admin.token, body: { trial_days: -1 } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({ trial_days: ["The trial days field must be at least 0."] })
  })
})

describe("POST /v1/admin/plans/{plan}/cycles", () => {
  test("201 with the Billing cycle; price as a string or a number, stored exactly", async () => {
    const plan = await admin.createPlan()
    const res = await app.post(`/v1/admin/plans/${plan.id}/cycles`, {
      token: admin.token,
      body: { name: "Quarterly", duration_days: 90, price: "24.99", currency: "USD" }
    })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: { id: expect.any(Number), name: "Quarterly", duration_days: 90, price: "24.99", currency: "USD" }
    })
    // a JSON number through the typed client (its payload sends the number as is), the declared 201 answer
    const number = await ok(
      staff.catalogAdmin.createCycle({ path: { plan: plan.id }, payload: { name: "Weekly", duration_days: 7, price: 10, currency: "eur" } })
    )
    expect(number).toMatchObject({ price: "0.10", currency: "EUR" })
    const [row] = await app.sql<{ price: string }>`select price::text as price from billing_cycles where id = ${number.id}`
    expect(row!.price).toBe("0.10")
  })

  test("bad price, duration and currency are 422", async () => {
    const plan = await admin.createPlan()
    const res = await app.post(`/v1/admin/plans/${plan.id}/cycles`, {
      token: admin.token,
      body: { name: "Bad", duration_days: 0, price: "9.999", currency: "US" }
    })
    expect(res.status).toBe(422)
    expect(Object.keys(res.body.errors).sort()).toEqual(["currency", "duration_days", "price"])
    for (const price of [-1, "-1.00", "abc", "1e3", true, null]) {
      const r = await app.post(`/v1/admin/plans/${plan.id}/cycles`, {
        token: admin.token,
        body: { name: "Bad", duration_days: 30, price, currency: "USD" }
      })
      expect(r.status).toBe(422)
      expect(r.body.errors.price).toHaveLength(1)
    }
    const missing = await app.post(`/v1/admin/plans/${plan.id}/cycles`, { token: admin.token, body: {} })
    expect(missing.body.errors).toEqual({
      name: ["The name field is required."],
      duration_days: ["The duration days field is required."],
      price: ["The price field is required."],
      currency: ["The currency field is required."]
    })
  })

  test("an unknown plan is 404", async () => {
    const missing = await fails(
      staff.catalogAdmin.createCycle({ path: { plan: 999999 }, payload: { name: "M", duration_days: 30, price: 100, currency: "USD" } })
    )
    expect(missing._tag).toBe("NotFound")
  })
})

describe("POST /v1/admin/promos [D33]", () => {
  test("201 with the promo; value as a number or a decimal string", async () => {
    const plan = await admin.createPlan()
    const res = await app.post("/v1/admin/promos", {
      token: admin.token,
      body: { code: "Spring25", type: "percentage", value: "25.5", expires_at: "2026-03-01T00:00:00Z", max_uses: 100, plan_ids: [plan.id] }
    })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        code: "Spring25",
        type: "percentage",
        value: 25.5,
        expires_at: "2026-03-01T00:00:00.000Z",
        max_uses: 100,
        max_uses_per_user: 1,
        uses: 0,
        plan_ids: [plan.id]
      }
    })
    // the declared 201 answer; `value` decodes from the JSON number 10 to "10.00"
    const fixed = await ok(staff.catalogAdmin.createPromo({ payload: { code: "TENOFF", type: "fixed", value: 1000 } }))
    expect(fixed).toMatchObject({ value: "10.00", expires_at: null, max_uses: null, plan_ids: [] })
  })

  test("a code taken case-insensitively is 422 errors.code", async () => {
    await ok(staff.catalogAdmin.createPromo({ payload: { code: "Taken", type: "fixed", value: 100 } }))
    const res = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "TAKEN", type: "fixed", value: 2 } })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { code: ["The code has already been taken."] }
    })
  })

  test("type, value, percentage over 100, dates, max_uses and unknown plans are checked", async () => {
    const bad = await app.post("/v1/admin/promos", {
      token: admin.token,
      body: { code: "", type: "bogo", value: "ten", expires_at: "soon", max_uses: -1, plan_ids: "all" }
    })
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({
      code: ["The code field is required."],
      type: ["The selected type is invalid."],
      value: ["The value field must be a non-negative amount with at most two decimals."],
      expires_at: ["The expires at field must be a valid date."],
      max_uses: ["The max uses field must be at least 0."],
      plan_ids: ["The plan ids field must be an array."]
    })
    const over = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "OVER", type: "percentage", value: 100.01 } })
    expect(over.status).toBe(422)
    expect(over.body.errors).toEqual({ value: ["The value field must not be greater than 100."] })
    const unknownPlan = await app.post("/v1/admin/promos", {
      token: admin.token,
      body: { code: "NOPLAN", type: "fixed", value: 1, plan_ids: [999999] }
    })
    expect(unknownPlan.status).toBe(422)
    expect(unknownPlan.body.errors.plan_ids).toBeDefined()
    const long = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "x".repeat(65), type: "fixed", value: 1 } })
    expect(long.body.errors).toEqual({ code: ["The code field must not be greater than 64 characters."] })
    const [row] = await app.sql<{ n: number }>`select count(*)::int as n from promo_codes where code in ('OVER', 'NOPLAN')`
    expect(row!.n).toBe(0)
  })
})

describe("plans carry usage_reset [D95]", () => {
  test("default monthly; set on create and update; shown publicly; another value is 422 errors.usage_reset", async () => {
    const plain = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Plain" } }))
    expect(plain.usage_reset).toBe("monthly")
    const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Anchored", usage_reset: "billing_day" } }))
    expect(made.usage_reset).toBe("billing_day")
    const changed = await ok(staff.catalogAdmin.updatePlan({ path: { plan: made.id }, payload: { usage_reset: "never" } }))
    expect(changed.usage_reset).toBe("never")
    expect((await ok(anyone.catalog.getPlan({ path: { plan: made.id } }))).usage_reset).toBe("never")
    expect((await ok(anyone.catalog.listPlans())).find((p) => p.id === made.id)?.usage_reset).toBe("never")
    for (const value of ["weekly", "", 1, null]) {
      const bad = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Bad", usage_reset: value } })
      expect(bad.status).toBe(422)
      expect(bad.body.errors).toEqual({ usage_reset: ["The selected usage reset is invalid."] })
    }
    const badUpdate = await app.put(`/v1/admin/plans/${made.id}`, { token: admin.token, body: { usage_reset: "yearly" } })
    expect(badUpdate.status).toBe(422)
    expect(badUpdate.body.errors).toEqual({ usage_reset: ["The selected usage reset is invalid."] })
    expect((await ok(anyone.catalog.getPlan({ path: { plan: made.id } }))).usage_reset).toBe("never")
  })
})
