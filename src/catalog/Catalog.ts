import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"
import { ValidationError } from "../platform/Errors.ts"
import { catalogChanged } from "./CatalogChanges.ts"
import { CatalogCache, type Snapshot } from "./CatalogCache.ts"
import { CatalogRepo, type NewPromo, type PlanUpdate } from "./CatalogRepo.ts"
import { type Cycle, INVALID_CYCLE, INVALID_PLAN, type Plan, PromoInvalid, PromoValidation, type UsageReset } from "./Domain.ts"
import { applyDiscount, formatCents, toCents } from "./Money.ts"
import { withQuotaAction } from "./PlanRules.ts"

export interface PricedOrder {
  readonly plan: Plan
  readonly cycle: Cycle
  /** the promo used, with the code as the caller submitted it */
  readonly promo: Option.Option<{ readonly id: number; readonly code: string }>
  readonly originalPrice: string
  readonly discount: string
  readonly amount: string
  readonly currency: string
}

/** How many uses of a promo the caller holds already (billing counts their invoices), for [D33]'s per-user limit. */
export type UsesOfCaller = (promoId: number) => Effect.Effect<number>

export interface PromoRequest {
  readonly code: string
  readonly planId: number
  readonly cycleId: number
  /** none: an anonymous caller, only the overall limits apply */
  readonly usesOfCaller: Option.Option<UsesOfCaller>
}

const isId = (n: number) => Number.isInteger(n) && n >= 1 && n <= 2_147_483_647

/** A row the database guarantees (a foreign key), missing from the catalogue: a defect. */
const present = <A>(value: A | undefined, what: string): A => {
  if (value === undefined) throw new Error(`catalogue: ${what} is missing`)
  return value
}

/**
 * The catalogue room: plans, cycles and promo codes. Reads come from the in-memory snapshot;
 * writes go to the repository and then empty the caches of this process.
 */
export class Catalog extends Effect.Service<Catalog>()("catalog/Catalog", {
  effect: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const cache = yield* CatalogCache
    const clock = yield* AppClock

    const withPlan = (id: number) => cache.snapshotWith((s) => !isId(id) || s.plans.has(id))
    const withCycle = (id: number) => cache.snapshotWith((s) => !isId(id) || s.cycles.has(id))

    const activePlan = (id: number) => Effect.map(withPlan(id), (s) => Option.filter(Option.fromNullable(s.plans.get(id)), (p) => p.is_active))
    const anyPlan = (id: number) => Effect.map(withPlan(id), (s) => Option.fromNullable(s.plans.get(id)))
    const cyclesOf = (planId: number) => Effect.map(cache.snapshot, (s) => s.cyclesOf.get(planId) ?? [])

    /** a cycle whose plan is active, with that plan */
    const activeCycle = (id: number) =>
      Effect.map(withCycle(id), (s) =>
        Option.flatMap(Option.fromNullable(s.cycles.get(id)), (cycle) =>
          Option.map(
            Option.filter(Option.fromNullable(s.plans.get(cycle.plan_id)), (p) => p.is_active),
            (plan) => ({ cycle, plan })
          )
        )
      )

    const lookup = (planId: number, cycleId: number, activeOnly: boolean) =>
      Effect.gen(function* () {
        const s = yield* cache.snapshotWith((s) => (!isId(planId) || s.plans.has(planId)) && (!isId(cycleId) || s.cycles.has(cycleId)))
        const plan = Option.filter(Option.fromNullable(s.plans.get(planId)), (p) => !activeOnly || p.is_active)
        const cycle = Option.filter(Option.fromNullable(s.cycles.get(cycleId)), (c) => c.plan_id === planId)
        if (Option.isSome(plan) && Option.isSome(cycle)) return { plan: plan.value, cycle: cycle.value }
        const errors: Record<string, Array<string>> = {}
        if (Option.isNone(plan)) errors["plan_id"] = [INVALID_PLAN]
        if (Option.isNone(cycle)) errors["cycle_id"] = [INVALID_CYCLE]
        return yield* Effect.fail(new ValidationError({ errors }))
      })

    /** an active plan and a cycle of that plan, else 422 errors.plan_id / errors.cycle_id */
    const planAndCycle = (planId: number, cycleId: number) => lookup(planId, cycleId, true)
    /** any plan (also inactive) and a cycle of it, for admin grants; same 422s */
    const anyPlanAndCycle = (planId: number, cycleId: number) => lookup(planId, cycleId, false)

    /** the plans and cycles of many rows (services, invoices) from one snapshot */
    const rowsOf = (planIds: Iterable<number>, cycleIds: Iterable<number>) =>
      Effect.map(
        cache.snapshotWith((s) => [...planIds].every((id) => s.plans.has(id)) && [...cycleIds].every((id) => s.cycles.has(id))),
        (s: Snapshot) => ({
          plan: (id: number) => present(s.plans.get(id), `plan ${id}`),
          cycle: (id: number) => present(s.cycles.get(id), `cycle ${id}`)
        })
      )

    /** [D33]: the promo that applies, or 422; counts nothing */
    const applicable = (request: PromoRequest, now: Date) =>
      Effect.gen(function* () {
        const promo = yield* repo.applicablePromo({ code: request.code, planId: request.planId, now })
        if (Option.isNone(promo)) return yield* Effect.fail(new PromoInvalid())
        const perUser = promo.value.max_uses_per_user
        if (perUser !== null && Option.isSome(request.usesOfCaller)) {
          if ((yield* request.usesOfCaller.value(promo.value.id)) >= perUser) return yield* Effect.fail(new PromoInvalid())
        }
        return promo.value
      })

    const quotePromo = (request: PromoRequest) =>
      Effect.gen(function* () {
        const { cycle } = yield* planAndCycle(request.planId, request.cycleId)
        const promo = yield* applicable(request, yield* clock.now)
        const price = toCents(cycle.price)
        return {
          code: request.code,
          type: promo.type,
          value: Number(promo.value),
          original_price: cycle.price,
          discounted_price: formatCents(applyDiscount(price, promo.type, promo.value).amount),
          currency: cycle.currency
        } satisfies typeof PromoValidation.Type
      })

    /**
     * Prices an order for an active plan and, with a code, counts one use (never past max_uses, even concurrently).
     * Call it inside the order's transaction so the use is counted with the order, or not at all.
     */
    const priceOrder = (input: {
      readonly planId: number
      readonly cycleId: number
      readonly promoCode: Option.Option<string>
      /** none: no caller's limit (an admin's invoice) */
      readonly usesOfCaller?: Option.Option<UsesOfCaller>
    }) =>
      Effect.gen(function* () {
        const { cycle, plan } = yield* planAndCycle(input.planId, input.cycleId)
        const unchanged: PricedOrder = {
          plan,
          cycle,
          promo: Option.none(),
          originalPrice: cycle.price,
          discount: "0.00",
          amount: cycle.price,
          currency: cycle.currency
        }
        if (Option.isNone(input.promoCode)) return unchanged
        const code = input.promoCode.value
        const now = yield* clock.now
        const found = yield* applicable({ code, planId: plan.id, cycleId: cycle.id, usesOfCaller: input.usesOfCaller ?? Option.none() }, now)
        const counted = yield* repo.countPromoUse(found.id, now)
        if (Option.isNone(counted)) return yield* Effect.fail(new PromoInvalid())
        const { amount, discount } = applyDiscount(toCents(cycle.price), counted.value.type, counted.value.value)
        return {
          ...unchanged,
          promo: Option.some({ id: counted.value.id, code }),
          discount: formatCents(discount),
          amount: formatCents(amount)
        } satisfies PricedOrder
      })

    const changed = <A, E>(write: Effect.Effect<A, E>) => Effect.zipLeft(write, catalogChanged)

    return {
      activePlans: Effect.map(cache.snapshot, (s) => s.activePlans),
      /** the body of `GET /v1/plans`, encoded once per catalogue version */
      planListJson: cache.planListJson,
      activePlan,
      anyPlan,
      cyclesOf,
      activeCycle,
      planAndCycle,
      anyPlanAndCycle,
      rowsOf,
      /** [D95]: the ids of the plans (any, also inactive) whose quota resets this way */
      planIdsResetting: (usageReset: UsageReset) =>
        Effect.map(cache.snapshot, (s) => [...s.plans.values()].filter((p) => p.usage_reset === usageReset).map((p) => p.id)),
      quotePromo,
      priceOrder,
      /** gives uses back (their invoices were cancelled), in the caller's transaction */
      releasePromoUses: repo.releasePromoUses,
      /** the ids among `ids` that are plans (any, also inactive) */
      existingPlanIds: repo.existingPlanIds,
      /** [D104]: `throttle_mbps` only with (and always with) `quota_action: throttle` (422) */
      createPlan: (plan: PlanUpdate & { readonly name: string }) =>
        Effect.flatMap(withQuotaAction(undefined, plan), (checked) => changed(repo.createPlan(checked))),
      // issue 34: checked against the locked row, not the snapshot, so that concurrent updates take turns
      updatePlan: (id: number, changes: PlanUpdate) =>
        Effect.flatMap(anyPlan(id), (current) =>
          Option.isNone(current) ? Effect.succeed(Option.none<Plan>()) : changed(repo.updatePlanChecked(id, (locked) => withQuotaAction(locked, changes)))
        ),
      createCycle: (cycle: { planId: number; name: string; durationDays: number; priceCents: number; currency: string }) => changed(repo.createCycle(cycle)),
      /** [D33]: a percentage is at most 100; the code (any case) and the plans are checked (422) */
      createPromo: (promo: NewPromo) =>
        Effect.gen(function* () {
          if (promo.type === "percentage" && promo.value > 100_00) {
            return yield* Effect.fail(ValidationError.field("value", "The value field must not be greater than 100."))
          }
          const planIds = [...new Set(promo.planIds)].sort((a, b) => a - b)
          const known = yield* repo.existingPlanIds(planIds.filter(isId))
          if (known.length !== planIds.length) {
            return yield* Effect.fail(ValidationError.field("plan_ids", "The selected plan ids is invalid."))
          }
          const created = yield* repo.insertPromo({ ...promo, planIds })
          if (Option.isNone(created)) return yield* Effect.fail(ValidationError.field("code", "The code has already been taken."))
          return { ...created.value, plan_ids: planIds }
        })
    } as const
  }),
  dependencies: [CatalogRepo.Default, CatalogCache.Default]
}) {
  /**
   * issue 35: the catalogue's rules over its tables in memory (`CatalogRepo.Test`, also given to
   * the test to set the catalogue up) and a cache that reads them each time; the clock is the test's.
   */
  static readonly Test: Layer.Layer<Catalog | CatalogRepo, never, AppClock> = Catalog.DefaultWithoutDependencies.pipe(
    Layer.provide(CatalogCache.Test),
    Layer.provideMerge(CatalogRepo.Test)
  )
}
