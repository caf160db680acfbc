import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { catalogAdmin, freshAddress } from "./helpers.ts"

// [D32] [D33] POST /v1/promos/validate: maths, expiry, max_uses, plan restriction, 10/min [D30].
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
let basic: { id: number }
let pro: { id: number }
let inactive: { id: number }
let monthly: { id: number }
let nickel: { id: number }
let proMonthly: { id: number }
let inactiveCycle: { id: number }

const INVALID = { success: false, message: "Invalid or expired promo code." }

const validate = (body: unknown, headers: Record<string, string> = freshAddress()) => app.post("/v1/promos/validate", { body, headers })
/** anyone through the typed client, from a client address of its own (a promo-validation window of its own [D30]) */
const guest = (headers: Record<string, string> = freshAddress()) => typedClient(app, { headers })

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  basic = await admin.createPlan({ name: "Basic" })
  pro = await admin.createPlan({ name: "Pro" })
  inactive = await admin.createPlan({ name: "Old", is_active: false })
  monthly = await admin.createCycle(basic.id, { price: "9.99", currency: "USD" })
  nickel = await admin.createCycle(basic.id, { name: "Nickel", price: "0.05", currency: "USD" })
  proMonthly = await admin.createCycle(pro.id, { price: "20.00", currency: "EUR" })
  inactiveCycle = await admin.createCycle(inactive.id, { price: "3.00" })
  await admin.createPromo({ code: "SAVE20", type: "percentage", value: 20 })
  await admin.createPromo({ code: "HALF", type: "percentage", value: "50" })
  await admin.createPromo({ code: "EIGHTH", type: "percentage", value: 12.5 })
  await admin.createPromo({ code: "FREE", type: "percentage", value: 100 })
  await admin.createPromo({ code: "FIVEOFF", type: "fixed", value: 5 })
  await admin.createPromo({ code: "HUGE", type: "fixed", value: "20.00" })
  await admin.createPromo({ code: "PROONLY", type: "fixed", value: "2.50", plan_ids: [pro.id] })
})
afterAll(() => app.dispose())

describe("promo maths [D32] [D33]", () => {
  test("percentage: 20% of 9.99 is 2.00 (rounded), leaving 7.99; the code is echoed as submitted", async () => {
    const res = await validate({ code: "save20", plan_id: basic.id, cycle_id: monthly.id })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        code: "save20",
        type: "percentage",
        value: 20,
        original_price: "9.99",
        discounted_price: "7.99",
        currency: "USD"
      }
    })
  })

  test("matching is case-insensitive in both directions, echoing each spelling", async () => {
    for (const code of ["SAVE20", "Save20", "sAvE20"]) {
      const visitor = await guest()
      const checked = await ok(visitor.catalog.validatePromo({ payload: { code, plan_id: basic.id, cycle_id: monthly.id } }))
      expect(checked.code).toBe(code)
    }
  })

  test("half-up at half a cent: 50% of 0.05 is a 0.03 discount, leaving 0.02", async () => {
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "HALF", plan_id: basic.id, cycle_id: nickel.id } }))
    expect(checked).toMatchObject({ value: 50, original_price: "0.05", discounted_price: "0.02" })
  })

  test("a decimal percentage: 12.5% of 9.99 (1.24875) is 1.25 off, leaving 8.74; value is the number 12.5", async () => {
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "eighth", plan_id: basic.id, cycle_id: monthly.id } }))
    expect(checked).toMatchObject({ type: "percentage", value: 12.5, discounted_price: "8.74" })
  })

  test("100% leaves 0.00", async () => {
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "FREE", plan_id: basic.id, cycle_id: monthly.id } }))
    expect(checked).toMatchObject({ original_price: "9.99", discounted_price: "0.00" })
  })

  test("fixed: 5 off 9.99 is 4.99; value is a JSON number", async () => {
    // the declared schema decodes `value` as a number only
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "FIVEOFF", plan_id: basic.id, cycle_id: monthly.id } }))
    expect(checked).toEqual({
      code: "FIVEOFF",
      type: "fixed",
      value: 5,
      original_price: "9.99",
      discounted_price: "4.99",
      currency: "USD"
    })
  })

  test("fixed larger than the price floors at 0.00", async () => {
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "HUGE", plan_id: basic.id, cycle_id: monthly.id } }))
    expect(checked).toMatchObject({ value: 20, discounted_price: "0.00" })
  })
})

describe("plan restriction [D33]", () => {
  test("a code restricted to a plan works on that plan, in its cycle's currency", async () => {
    const visitor = await guest()
    const checked = await ok(visitor.catalog.validatePromo({ payload: { code: "PROONLY", plan_id: pro.id, cycle_id: proMonthly.id } }))
    expect(checked).toMatchObject({ value: 2.5, original_price: "20.00", discounted_price: "17.50", currency: "EUR" })
  })

  test("and is invalid on another plan", async () => {
    const res = await validate({ code: "PROONLY", plan_id: basic.id, cycle_id: monthly.id })
    expect(res.status).toBe(422)
    expect(res.body).toEqual(INVALID)
  })
})

describe("invalid codes [D33]", () => {
  test("an unknown code is 422 Invalid or expired promo code.", async () => {
    const res = await validate({ code: "NOPE", plan_id: basic.id, cycle_id: monthly.id })
    expect(res.status).toBe(422)
    expect(res.body).toEqual(INVALID)
  })

  test("a code past expires_at is invalid (clock moved)", async () => {
    const now = app.clock.get()
    await ok(admin.client.catalogAdmin.createPromo({ payload: { code: "SOON", type: "fixed", value: 100, expires_at: new Date(now.getTime() + 3_600_000) } }))
    const visitor = await guest()
    expect((await ok(visitor.catalog.validatePromo({ payload: { code: "SOON", plan_id: basic.id, cycle_id: monthly.id } }))).code).toBe("SOON")
    app.clock.advance(3_600_000)
    const res = await validate({ code: "SOON", plan_id: basic.id, cycle_id: monthly.id })
    expect(res.status).toBe(422)
    expect(res.body).toEqual(INVALID)
  })

  test("validation counts no use; a used-up code (uses = max_uses) is invalid", async () => {
    const promo = await ok(admin.client.catalogAdmin.createPromo({ payload: { code: "TWICE", type: "percentage", value: 1000, max_uses: 2 } }))
    for (let i = 0; i < 3; i++) {
      const visitor = await guest()
      expect((await ok(visitor.catalog.validatePromo({ payload: { code: "TWICE", plan_id: basic.id, cycle_id: monthly.id } }))).code).toBe("TWICE")
    }
    const [row] = await app.sql<{ uses: number }>`select uses from promo_codes where id = ${promo.id}`
    expect(row!.uses).toBe(0)
    await app.sql`update promo_codes set uses = max_uses where id = ${promo.id}`
    const res = await validate({ code: "TWICE", plan_id: basic.id, cycle_id: monthly.id })
    expect(res.status).toBe(422)
    expect(res.body).toEqual(INVALID)
  })
})

describe("plan and cycle checks [D33] [D12]", () => {
  test("a plan that does not exist: errors.plan_id", async () => {
    const res = await validate({ code: "SAVE20", plan_id: 999999, cycle_id: monthly.id })
    expect(res.status).toBe(422)
    expect(res.body.message).toBe("The given data was invalid.")
    expect(res.body.errors.plan_id).toEqual(["The selected plan id is invalid."])
  })

  test("an inactive plan: errors.plan_id", async () => {
    const res = await validate({ code: "SAVE20", plan_id: inactive.id, cycle_id: inactiveCycle.id })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ plan_id: ["The selected plan id is invalid."] })
  })

  test("a cycle that does not exist: errors.cycle_id", async () => {
    const res = await validate({ code: "SAVE20", plan_id: basic.id, cycle_id: 999999 })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { cycle_id: ["The selected cycle id is invalid."] }
    })
  })

  test("a cycle of another plan: errors.cycle_id", async () => {
    const res = await validate({ code: "SAVE20", plan_id: basic.id, cycle_id: proMonthly.id })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ cycle_id: ["The selected cycle id is invalid."] })
  })

  test("plan and cycle are checked before the code", async () => {
    const res = await validate({ code: "NOPE", plan_id: 0, cycle_id: -3 })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({
      plan_id: ["The selected plan id is invalid."],
      cycle_id: ["The selected cycle id is invalid."]
    })
  })

  test("bad types and missing fields are 422 with every field", async () => {
    const res = await validate({ code: 5, plan_id: "abc", cycle_id: 1.5 })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({
      code: ["The code field must be a string."],
      plan_id: ["The plan id field must be an integer."],
      cycle_id: ["The cycle id field must be an integer."]
    })
    const missing = await validate({})
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({
      code: ["The code field is required."],
      plan_id: ["The plan id field is required."],
      cycle_id: ["The cycle id field is required."]
    })
    const long = await validate({ code: "x".repeat(65), plan_id: basic.id, cycle_id: monthly.id })
    expect(long.body.errors).toEqual({ code: ["The code field must not be greater than 64 characters."] })
    const notJson = await app.post("/v1/promos/validate", { raw: "{nope", headers: freshAddress() })
    expect(notJson.status).toBe(422)
    expect(notJson.body.errors.body).toBeDefined()
  })
})

describe("rate limit: 10 a minute [D30]", () => {
  test("sends X-RateLimit-* headers, the 11th request is 429 with Retry-After, invalid ones count too", async () => {
    const address = freshAddress()
    const first = await validate({ code: "SAVE20", plan_id: basic.id, cycle_id: monthly.id }, address)
    expect(first.status).toBe(200)
    expect(first.headers.get("x-ratelimit-limit")).toBe("10")
    expect(first.headers.get("x-ratelimit-remaining")).toBe("9")
    for (let i = 2; i <= 10; i++) {
      const res = await validate({ code: 1 }, address)
      expect(res.status).toBe(422)
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(10 - i))
    }
    const limited = await validate({ code: "SAVE20", plan_id: basic.id, cycle_id: monthly.id }, address)
    expect(limited.status).toBe(429)
    expect(limited.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0)
    // another address has its own window (the declared 200 answer)
    const visitor = await guest()
    expect((await ok(visitor.catalog.validatePromo({ payload: { code: "SAVE20", plan_id: basic.id, cycle_id: monthly.id } }))).code).toBe("SAVE20")
    // the window ends after 60 s
    app.clock.advance(61_000)
    const same = await guest(address)
    expect((await ok(same.catalog.validatePromo({ payload: { code: "SAVE20", plan_id: basic.id, cycle_id: monthly.id } }))).code).toBe("SAVE20")
  })
})
