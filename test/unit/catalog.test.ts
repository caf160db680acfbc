import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Catalog } from "../../src/catalog/Catalog.ts"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { it } from "../support/effect.ts"

// Issue 35, the unit tier: the catalogue's rules ([D32], [D33], [D104]) as Effect programs over
// `Catalog.Test` (its tables in memory) and a clock the test moves; no HTTP, no database.

const clock = AppClock.Test()
const test = it.layer(Catalog.Test.pipe(Layer.provideMerge(clock.layer)))
const HOUR = 3_600_000

/** a small catalogue: Basic (active, 9.99 USD a month), Pro (20.00), Old (inactive) */
const world = Effect.gen(function* () {
  const repo = yield* CatalogRepo
  const basic = yield* repo.createPlan({ name: "Basic", trial_days: 7 })
  const pro = yield* repo.createPlan({ name: "Pro" })
  const old = yield* repo.createPlan({ name: "Old", is_active: false })
  const monthly = yield* repo.createCycle({ planId: basic.id, name: "Monthly", durationDays: 30, priceCents: 999, currency: "USD" })
  const proMonthly = yield* repo.createCycle({ planId: pro.id, name: "Monthly", durationDays: 30, priceCents: 2000, currency: "USD" })
  const oldCycle = yield* repo.createCycle({ planId: old.id, name: "Monthly", durationDays: 30, priceCents: 400, currency: "USD" })
  return { basic, pro, old, monthly, proMonthly, oldCycle, catalog: yield* Catalog, repo }
})

const promo = (code: string, extra: Partial<Parameters<CatalogRepo["insertPromo"]>[0]> = {}) =>
  Effect.flatMap(CatalogRepo, (repo) =>
    Effect.flatMap(
      repo.insertPromo({ code, type: "fixed", value: 100, expiresAt: null, maxUses: null, maxUsesPerUser: null, planIds: [], ...extra }),
      (created) => Effect.orDieWith(created, () => `promo ${code} not created`)
    )
  )

describe("planAndCycle: an active plan and a cycle of it, else 422 naming the field [D33]", () => {
  test.effect("found; an inactive plan, a cycle of another plan, impossible ids: 422 errors.plan_id / errors.cycle_id", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly, old, oldCycle, proMonthly } = yield* world
      const found = yield* catalog.planAndCycle(basic.id, monthly.id)
      expect([found.plan.name, found.cycle.price]).toEqual(["Basic", "9.99"])

      expect((yield* Effect.flip(catalog.planAndCycle(old.id, oldCycle.id))).errors).toEqual({ plan_id: ["The selected plan id is invalid."] })
      expect((yield* Effect.flip(catalog.planAndCycle(basic.id, proMonthly.id))).errors).toEqual({ cycle_id: ["The selected cycle id is invalid."] })
      expect(Object.keys((yield* Effect.flip(catalog.planAndCycle(-1, 3_000_000_000))).errors).sort()).toEqual(["cycle_id", "plan_id"])
      // an admin's grant takes an inactive plan
      expect((yield* catalog.anyPlanAndCycle(old.id, oldCycle.id)).plan.is_active).toBe(false)
    })
  )
})

describe("priceOrder and quotePromo [D32] [D33]", () => {
  test.effect("no code: the cycle's price; a percentage rounds half-up to the cent and counts one use", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly } = yield* world
      const plain = yield* catalog.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.none() })
      expect(plain).toMatchObject({ originalPrice: "9.99", discount: "0.00", amount: "9.99", currency: "USD" })

      const eighth = yield* promo("EIGHTH", { type: "percentage", value: 1250 })
      const priced = yield* catalog.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("eighth") })
      expect(priced).toMatchObject({ discount: "1.25", amount: "8.74" })
      expect(priced.promo).toEqual(Option.some({ id: eighth.id, code: "eighth" }))
      const counted = yield* Effect.flatMap(CatalogRepo, (repo) => repo.applicablePromo({ code: "EIGHTH", planId: basic.id, now: new Date() }))
      expect(Option.map(counted, (p) => p.uses)).toEqual(Option.some(1))
    })
  )

  test.effect("a fixed discount above the price leaves 0.00, never below", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly } = yield* world
      yield* promo("BIG", { value: 5000 })
      expect(yield* catalog.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("BIG") })).toMatchObject({
        discount: "9.99",
        amount: "0.00"
      })
    })
  )

  test.effect("a code for another plan, an unknown code, an expired code: Invalid or expired promo code.", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly, pro } = yield* world
      yield* promo("PROONLY", { planIds: [pro.id] })
      yield* promo("HOUR", { expiresAt: new Date(clock.controls.get().getTime() + HOUR) })
      const price = (code: string) => catalog.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some(code) })

      for (const code of ["PROONLY", "NOPE"]) {
        const refused = yield* Effect.flip(price(code))
        expect(refused._tag === "PromoInvalid" && refused.message).toBe("Invalid or expired promo code.")
      }
      expect((yield* price("HOUR")).discount).toBe("1.00")
      clock.controls.advance(HOUR)
      expect((yield* Effect.flip(price("HOUR")))._tag).toBe("PromoInvalid")
    })
  )

  test.effect("max_uses: the code stops at its limit, and a use given back makes it work again (never below 0)", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly } = yield* world
      const once = yield* promo("ONCE", { maxUses: 1 })
      const price = catalog.priceOrder({ planId: basic.id, cycleId: monthly.id, promoCode: Option.some("once") })
      expect((yield* price).amount).toBe("8.99")
      expect((yield* Effect.flip(price))._tag).toBe("PromoInvalid")
      yield* catalog.releasePromoUses([once.id])
      yield* catalog.releasePromoUses([once.id])
      expect((yield* price).amount).toBe("8.99")
      expect((yield* Effect.flip(price))._tag).toBe("PromoInvalid")
    })
  )

  test.effect("[D33] rev. 2: the caller's own uses count against max_uses_per_user; an anonymous quote meets only the overall limits", () =>
    Effect.gen(function* () {
      const { basic, catalog, monthly } = yield* world
      yield* promo("PERUSER", { type: "percentage", value: 1000, maxUsesPerUser: 1 })
      let uses = 0
      const quote = (caller: boolean) =>
        catalog.quotePromo({
          code: "PERUSER",
          planId: basic.id,
          cycleId: monthly.id,
          usesOfCaller: caller ? Option.some(() => Effect.sync(() => uses)) : Option.none()
        })
      expect(yield* quote(true)).toEqual({ code: "PERUSER", type: "percentage", value: 10, original_price: "9.99", discounted_price: "8.99", currency: "USD" })
      uses = 1
      expect((yield* Effect.flip(quote(true)))._tag).toBe("PromoInvalid")
      expect((yield* quote(false)).discounted_price).toBe("8.99")
    })
  )
})

describe("createPromo [D33]", () => {
  test.effect("a percentage above 100, unknown plan ids, a code taken in another case: 422 naming the field", () =>
    Effect.gen(function* () {
      const { basic, catalog } = yield* world
      const base = { type: "fixed" as const, value: 100, expiresAt: null, maxUses: null, maxUsesPerUser: null, planIds: [] }
      expect((yield* Effect.flip(catalog.createPromo({ ...base, code: "TOOMUCH", type: "percentage", value: 100_01 }))).errors).toEqual({
        value: ["The value field must not be greater than 100."]
      })
      expect((yield* Effect.flip(catalog.createPromo({ ...base, code: "GHOST", planIds: [basic.id, 999] }))).errors).toEqual({
        plan_ids: ["The selected plan ids is invalid."]
      })
      const created = yield* catalog.createPromo({ ...base, code: "Summer", planIds: [basic.id, basic.id] })
      expect(created.plan_ids).toEqual([basic.id])
      expect((yield* Effect.flip(catalog.createPromo({ ...base, code: "SUMMER" }))).errors).toEqual({ code: ["The code has already been taken."] })
    })
  )
})

describe("[D104] quota_action and throttle_mbps go together", () => {
  test.effect("throttle needs a speed; suspend refuses one; switching to suspend drops the speed", () =>
    Effect.gen(function* () {
      const { catalog } = yield* world
      expect((yield* Effect.flip(catalog.createPlan({ name: "T", quota_action: "throttle" }))).errors).toEqual({
        throttle_mbps: ["The throttle mbps field is required when quota action is throttle."]
      })
      expect((yield* Effect.flip(catalog.createPlan({ name: "S", throttle_mbps: 5 }))).errors).toEqual({
        throttle_mbps: ["The throttle mbps field is prohibited unless quota action is throttle."]
      })
      const throttled = yield* catalog.createPlan({ name: "T", quota_action: "throttle", throttle_mbps: 2 })
      expect([throttled.quota_action, throttled.throttle_mbps]).toEqual(["throttle", 2])
      const switched = yield* catalog.updatePlan(throttled.id, { quota_action: "suspend" })
      expect(Option.map(switched, (p) => [p.quota_action, p.throttle_mbps])).toEqual(Option.some(["suspend", null]))
      expect(yield* catalog.updatePlan(9_999, { name: "nobody" })).toEqual(Option.none())
      // the snapshot sees the write at once
      expect(Option.map(yield* catalog.anyPlan(throttled.id), (p) => p.quota_action)).toEqual(Option.some("suspend"))
    })
  )
})
