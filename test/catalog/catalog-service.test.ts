import { SqlClient } from "@effect/sql"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Either, Option } from "effect"
import { Catalog } from "../../src/catalog/Catalog.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { catalogAdmin } from "./helpers.ts"
import { PlanId } from "../../src/platform/Ids.ts"

// The Catalog service that orders use: prices, counts promo uses in the caller's transaction,
// never past max_uses under concurrent orders, gives uses back ([D33]).
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
let basic: { id: number }
let pro: { id: number }
let inactive: { id: number }
let monthly: { id: number }
let proMonthly: { id: number }
let inactiveCycle: { id: number }

const withCatalog = <A, E>(f: (catalog: Catalog, sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  app.run(
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const sql = yield* SqlClient.SqlClient
      return yield* f(catalog, sql)
    }).pipe(Effect.provide(Catalog.Default))
  )

const usesOf = async (id: number) => (await app.sql<{ uses: number }>`select uses from promo_codes where id = ${id}`)[0]!.uses

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  basic = await admin.createPlan({ name: "Basic", trial_days: 7, speed_limit_mbps: 100, bandwidth_limit_gb: 50 })
  pro = await admin.createPlan({ name: "Pro" })
  inactive = await admin.createPlan({ name: "Old", is_active: false })
  monthly = await admin.createCycle(basic.id, { price: "9.99", currency: "USD" })
  proMonthly = await admin.createCycle(pro.id, { price: "20.00" })
  inactiveCycle = await admin.createCycle(inactive.id, { price: "4.00" })
})
afterAll(() => app.dispose())

describe("planAndCycle / anyPlanAndCycle", () => {
  test("an active plan and its cycle", async () => {
    const found = await withCatalog((c) => c.planAndCycle(basic.id, monthly.id))
    expect(found).toEqual({
      plan: {
        id: PlanId.make(basic.id),
        name: "Basic",
        description: "A plan",
        bandwidth_limit_gb: 50,
        speed_limit_mbps: 100,
        trial_days: 7,
        device_limit: 5,
        usage_reset: "monthly",
        quota_action: "suspend",
        throttle_mbps: null,
        is_active: true
      },
      cycle: { id: monthly.id, plan_id: PlanId.make(basic.id), name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" }
    })
  })

  test("inactive, unknown or mismatched: 422 errors.plan_id / errors.cycle_id", async () => {
    const run = (p: number, c: number) => withCatalog((cat) => Effect.either(cat.planAndCycle(p, c)))
    const inactiveResult = await run(inactive.id, inactiveCycle.id)
    expect(Either.isLeft(inactiveResult) && inactiveResult.left.errors).toEqual({ plan_id: ["The selected plan id is invalid."] })
    const mismatch = await run(basic.id, proMonthly.id)
    expect(Either.isLeft(mismatch) && mismatch.left.errors).toEqual({ cycle_id: ["The selected cycle id is invalid."] })
    const impossible = await run(-1, 3_000_000_000)
    expect(Either.isLeft(impossible) && Object.keys(impossible.left.errors).sort()).toEqual(["cycle_id", "plan_id"])
  })

  test("anyPlanAndCycle accepts an inactive plan (admin grants)", async () => {
    const found = await withCatalog((c) => c.anyPlanAndCycle(inactive.id, inactiveCycle.id))
    expect(found.plan.is_active).toBe(false)
    expect(found.cycle.price).toBe("4.00")
  })
})

describe("priceOrder [D32] [D33]", () => {
  test("without a code: the cycle's price, no discount", async () => {
    const priced = await withCatalog((c) => c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.none() }))
    expect(priced).toMatchObject({ originalPrice: "9.99", discount: "0.00", amount: "9.99", currency: "USD" })
    expect(Option.isNone(priced.promo)).toBe(true)
  })

  test("with a code: discount rounded half-up, the code as submitted, one use counted", async () => {
    const promo = await admin.createPromo({ code: "EIGHTH", type: "percentage", value: 12.5 })
    const priced = await withCatalog((c) => c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("eighth") }))
    expect(priced).toMatchObject({ originalPrice: "9.99", discount: "1.25", amount: "8.74" })
    expect(priced.promo).toEqual(Option.some({ id: promo.id, code: "eighth" }))
    expect(await usesOf(promo.id)).toBe(1)
  })

  test("fixed larger than the price: discount is the price, amount 0.00", async () => {
    await admin.createPromo({ code: "BIG", type: "fixed", value: 50 })
    const priced = await withCatalog((c) => c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("BIG") }))
    expect(priced).toMatchObject({ discount: "9.99", amount: "0.00" })
  })

  test("a bad code is Invalid or expired promo code. and counts nothing", async () => {
    const promo = await admin.createPromo({ code: "PROONLY", type: "fixed", value: 1, plan_ids: [pro.id] })
    const result = await withCatalog((c) => Effect.either(c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("PROONLY") })))
    expect(Either.isLeft(result) && result.left._tag).toBe("PromoInvalid")
    expect(Either.isLeft(result) && result.left.message).toBe("Invalid or expired promo code.")
    expect(await usesOf(promo.id)).toBe(0)
    const unknown = await withCatalog((c) => Effect.either(c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("NOPE") })))
    expect(Either.isLeft(unknown) && unknown.left.message).toBe("Invalid or expired promo code.")
  })

  test("an expired code is refused (clock moved)", async () => {
    await admin.createPromo({ code: "HOUR", type: "fixed", value: 1, expires_at: new Date(app.clock.get().getTime() + 3_600_000).toISOString() })
    app.clock.advance(3_600_000)
    const result = await withCatalog((c) => Effect.either(c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("HOUR") })))
    expect(Either.isLeft(result)).toBe(true)
  })

  test("a use counted in a transaction that rolls back is not counted", async () => {
    const promo = await admin.createPromo({ code: "ROLLBACK", type: "fixed", value: 1, max_uses: 1 })
    const result = await withCatalog((c, sql) =>
      Effect.either(
        sql.withTransaction(
          c
            .priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("ROLLBACK") })
            .pipe(Effect.zipRight(Effect.fail("order failed after pricing" as const)))
        )
      )
    )
    expect(Either.isLeft(result)).toBe(true)
    expect(await usesOf(promo.id)).toBe(0)
  })

  test("10 concurrent orders on a max_uses = 3 code: exactly 3 succeed, uses never pass 3", async () => {
    const promo = await admin.createPromo({ code: "THREE", type: "percentage", value: 10, max_uses: 3 })
    const results = await withCatalog((c, sql) =>
      Effect.all(
        Array.from({ length: 10 }, () =>
          Effect.either(sql.withTransaction(c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("three") })))
        ),
        { concurrency: "unbounded" }
      )
    )
    expect(results.filter(Either.isRight)).toHaveLength(3)
    const refused = results.filter(Either.isLeft)
    expect(refused).toHaveLength(7)
    for (const r of refused) expect(r.left.message).toBe("Invalid or expired promo code.")
    expect(await usesOf(promo.id)).toBe(3)
    // used up: validation says so too
    const res = await app.post("/v1/promos/validate", {
      body: { code: "THREE", plan_id: basic.id, cycle_id: monthly.id },
      headers: { "x-forwarded-for": "10.99.0.1" }
    })
    expect(res.status).toBe(422)
  })

  test("releasePromoUse gives one use back, never below 0; the code works again", async () => {
    const promo = await admin.createPromo({ code: "ONCE", type: "fixed", value: 1, max_uses: 1 })
    await withCatalog((c) => c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("ONCE") }))
    expect(await usesOf(promo.id)).toBe(1)
    const again = await withCatalog((c) => Effect.either(c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("ONCE") })))
    expect(Either.isLeft(again)).toBe(true)
    await withCatalog((c) => c.releasePromoUses([promo.id]))
    expect(await usesOf(promo.id)).toBe(0)
    await withCatalog((c) => c.releasePromoUses([promo.id]))
    expect(await usesOf(promo.id)).toBe(0)
    const priced = await withCatalog((c) => c.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("once") }))
    expect(priced.amount).toBe("8.99")
  })
})
