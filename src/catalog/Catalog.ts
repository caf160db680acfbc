import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { BusinessRuleViolation, ValidationError } from "../platform/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { applyDiscount, type DiscountType, formatCents, normalizeAmount, toCents } from "./Money.ts"

export interface CatalogPlan {
  readonly id: number
  readonly name: string
  readonly bandwidthLimitGb: number
  readonly speedLimitMbps: number | null
  readonly trialDays: number
  readonly isActive: boolean
}

export interface CatalogCycle {
  readonly id: number
  readonly planId: number
  readonly name: string
  readonly durationDays: number
  /** two decimals, e.g. "9.99" */
  readonly price: string
  readonly currency: string
}

export interface PricedOrder {
  readonly plan: CatalogPlan
  readonly cycle: CatalogCycle
  /** the promo used, with the code as the caller submitted it */
  readonly promo: Option.Option<{ readonly id: number; readonly code: string }>
  readonly originalPrice: string
  readonly discount: string
  readonly amount: string
  readonly currency: string
}

const isId = (n: number) => Number.isInteger(n) && n >= 1 && n <= 2_147_483_647

export const INVALID_PLAN = "The selected plan id is invalid."
export const INVALID_CYCLE = "The selected cycle id is invalid."
export const INVALID_PROMO = "Invalid or expired promo code."

export interface PlanRow {
  readonly id: number
  readonly name: string
  readonly description: string
  readonly bandwidth_limit_gb: number
  readonly speed_limit_mbps: number | null
  readonly trial_days: number
  readonly is_active: boolean
}

export interface CycleRow {
  readonly id: number
  readonly plan_id: number
  readonly name: string
  readonly duration_days: number
  readonly price: string
  readonly currency: string
}

export interface PromoRow {
  readonly id: number
  readonly code: string
  readonly type: DiscountType
  readonly value: string
  readonly expires_at: Date | null
  readonly max_uses: number | null
  readonly uses: number
}

export const toPlan = (r: PlanRow): CatalogPlan => ({
  id: r.id,
  name: r.name,
  bandwidthLimitGb: r.bandwidth_limit_gb,
  speedLimitMbps: r.speed_limit_mbps,
  trialDays: r.trial_days,
  isActive: r.is_active
})

export const toCycle = (r: CycleRow): CatalogCycle => ({
  id: r.id,
  planId: r.plan_id,
  name: r.name,
  durationDays: r.duration_days,
  price: normalizeAmount(r.price),
  currency: r.currency
})

/**
 * The catalogue as other rooms see it (orders, admin grants, invoices): plans and cycles,
 * and pricing with promo codes whose uses are counted in the caller's transaction ([D33]).
 */
export class Catalog extends Context.Tag("Catalog")<Catalog, {
  /** an active plan and a cycle of that plan, else 422 errors.plan_id / errors.cycle_id */
  readonly planAndCycle: (planId: number, cycleId: number) => Effect.Effect<{ plan: CatalogPlan; cycle: CatalogCycle }, ValidationError>
  /** any plan (also inactive) and a cycle of it, for admin grants; same 422s */
  readonly anyPlanAndCycle: (planId: number, cycleId: number) => Effect.Effect<{ plan: CatalogPlan; cycle: CatalogCycle }, ValidationError>
  /**
   * Prices an order and, with a code, counts one use with a guarded update (never past
   * max_uses, even concurrently). Call it inside the caller's `sql.withTransaction` so the use
   * is counted with the order, or not at all.
   */
  readonly priceOrder: (input: {
    readonly planId: number
    readonly cycleId: number
    readonly promoCode: Option.Option<string>
  }) => Effect.Effect<PricedOrder, ValidationError | BusinessRuleViolation>
  /** gives one use back (the invoice with that promo was cancelled); never below 0 */
  readonly releasePromoUse: (promoId: number) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    Catalog,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const findPlan = (id: number) =>
        Effect.map(
          sql<PlanRow>`select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active
            from plans where id = ${id}`,
          (rows) => rows[0]
        )

      const lookup = (planId: number, cycleId: number, activeOnly: boolean) =>
        Effect.gen(function*() {
          // an id that cannot exist (0, negative, past int4) is simply not found
          if (!isId(planId) || !isId(cycleId)) {
            const plan = isId(planId) ? yield* findPlan(planId) : undefined
            return { plan: plan && (!activeOnly || plan.is_active) ? plan : undefined, cycle: undefined }
          }
          const plans = yield* sql<PlanRow>`
            select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active
            from plans where id = ${planId}`
          const cycles = yield* sql<CycleRow>`
            select id, plan_id, name, duration_days, price::text as price, currency
            from billing_cycles where id = ${cycleId}`
          const plan = plans[0] && (!activeOnly || plans[0].is_active) ? plans[0] : undefined
          const cycle = cycles[0] && cycles[0].plan_id === planId ? cycles[0] : undefined
          return { plan, cycle }
        }).pipe(
          Effect.orDie,
          Effect.flatMap(({ cycle, plan }) => {
            if (plan && cycle) return Effect.succeed({ plan: toPlan(plan), cycle: toCycle(cycle) })
            const errors: Record<string, Array<string>> = {}
            if (!plan) errors["plan_id"] = [INVALID_PLAN]
            if (!cycle) errors["cycle_id"] = [INVALID_CYCLE]
            return Effect.fail(new ValidationError({ errors }))
          })
        )

      const planAndCycle = (planId: number, cycleId: number) => lookup(planId, cycleId, true)
      const anyPlanAndCycle = (planId: number, cycleId: number) => lookup(planId, cycleId, false)

      const priceOrder = (input: {
        readonly planId: number
        readonly cycleId: number
        readonly promoCode: Option.Option<string>
      }) =>
        Effect.gen(function*() {
          const { cycle, plan } = yield* planAndCycle(input.planId, input.cycleId)
          const price = toCents(cycle.price)
          if (Option.isNone(input.promoCode)) {
            return {
              plan,
              cycle,
              promo: Option.none(),
              originalPrice: cycle.price,
              discount: "0.00",
              amount: cycle.price,
              currency: cycle.currency
            } satisfies PricedOrder
          }
          const code = input.promoCode.value
          const now = yield* clock.now
          // one guarded statement: a concurrent order waits on the row lock, then re-checks uses
          const used = yield* sql<{ id: number; type: DiscountType; value: string }>`
            update promo_codes p set uses = p.uses + 1
            where lower(p.code) = lower(${code})
              and (p.expires_at is null or p.expires_at > ${now})
              and (p.max_uses is null or p.uses < p.max_uses)
              and (not exists (select 1 from promo_code_plans r where r.promo_code_id = p.id)
                   or exists (select 1 from promo_code_plans r where r.promo_code_id = p.id and r.plan_id = ${plan.id}))
            returning p.id, p.type, p.value::text as value`.pipe(Effect.orDie)
          const promo = used[0]
          if (!promo) return yield* Effect.fail(new BusinessRuleViolation({ message: INVALID_PROMO }))
          const { amount, discount } = applyDiscount(price, promo.type, promo.value)
          return {
            plan,
            cycle,
            promo: Option.some({ id: promo.id, code }),
            originalPrice: cycle.price,
            discount: formatCents(discount),
            amount: formatCents(amount),
            currency: cycle.currency
          } satisfies PricedOrder
        })

      const releasePromoUse = (promoId: number) =>
        sql`update promo_codes set uses = greatest(uses - 1, 0) where id = ${promoId}`.pipe(Effect.asVoid, Effect.orDie)

      return { planAndCycle, anyPlanAndCycle, priceOrder, releasePromoUse }
    })
  )
}
