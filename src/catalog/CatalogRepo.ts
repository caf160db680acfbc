import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { BusinessRuleViolation, ValidationError } from "../platform/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { catalogChanged } from "./CatalogChanges.ts"
import { type CycleRow, INVALID_CYCLE, INVALID_PLAN, INVALID_PROMO, type PlanRow, type PromoRow } from "./Catalog.ts"
import { applyDiscount, type DiscountType, formatCents, toCents } from "./Money.ts"

const MAX_INT4 = 2_147_483_647
const isId = (n: number) => Number.isInteger(n) && n >= 1 && n <= MAX_INT4

export interface PlanChanges {
  readonly name?: string
  readonly description?: string
  readonly bandwidthLimitGb?: number
  readonly speedLimitMbps?: number | null
  readonly trialDays?: number
  readonly isActive?: boolean
}

export interface NewPromo {
  readonly code: string
  readonly type: DiscountType
  /** cents for `fixed`, basis points for `percentage` (both two-decimal numerics) */
  readonly value: number
  readonly expiresAt: Date | null
  readonly maxUses: number | null
  readonly planIds: ReadonlyArray<number>
}

export interface PromoQuote {
  readonly code: string
  readonly type: DiscountType
  readonly value: string
  readonly originalPrice: string
  readonly discountedPrice: string
  readonly currency: string
}

export interface PromoWithPlans extends PromoRow {
  readonly plan_ids: ReadonlyArray<number>
}

/** The catalogue's own tables, for its HTTP handlers (public reads and admin writes). */
export class CatalogRepo extends Context.Tag("CatalogRepo")<CatalogRepo, {
  readonly activePlans: Effect.Effect<ReadonlyArray<PlanRow>>
  readonly activePlan: (id: number) => Effect.Effect<Option.Option<PlanRow>>
  readonly anyPlan: (id: number) => Effect.Effect<Option.Option<PlanRow>>
  readonly cyclesOf: (planId: number) => Effect.Effect<ReadonlyArray<CycleRow>>
  /** a cycle whose plan is active, with that plan */
  readonly activeCycle: (id: number) => Effect.Effect<Option.Option<{ cycle: CycleRow; plan: PlanRow }>>
  /** [D33]: what a code would give, counting nothing */
  readonly quotePromo: (input: { code: string; planId: number; cycleId: number }) => Effect.Effect<PromoQuote, ValidationError | BusinessRuleViolation>
  readonly createPlan: (plan: PlanChanges & { readonly name: string }) => Effect.Effect<PlanRow>
  readonly updatePlan: (id: number, changes: PlanChanges) => Effect.Effect<Option.Option<PlanRow>>
  readonly createCycle: (planId: number, cycle: { name: string; durationDays: number; priceCents: number; currency: string }) => Effect.Effect<CycleRow>
  /** none when the code is taken (case-insensitively) */
  readonly createPromo: (promo: NewPromo) => Effect.Effect<Option.Option<PromoWithPlans>, ValidationError>
}>() {
  static readonly Live = Layer.effect(
    CatalogRepo,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock

      const planColumns = sql`id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active`
      const cycleColumns = sql`id, plan_id, name, duration_days, price::text as price, currency`
      const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

      const activePlans = sql<PlanRow>`select ${planColumns} from plans where is_active order by id`.pipe(Effect.orDie)

      const activePlan = (id: number) =>
        isId(id)
          ? sql<PlanRow>`select ${planColumns} from plans where id = ${id} and is_active`.pipe(Effect.map(first), Effect.orDie)
          : Effect.succeed(Option.none<PlanRow>())

      const anyPlan = (id: number) =>
        isId(id)
          ? sql<PlanRow>`select ${planColumns} from plans where id = ${id}`.pipe(Effect.map(first), Effect.orDie)
          : Effect.succeed(Option.none<PlanRow>())

      const cycleById = (id: number) =>
        isId(id)
          ? sql<CycleRow>`select ${cycleColumns} from billing_cycles where id = ${id}`.pipe(Effect.map(first), Effect.orDie)
          : Effect.succeed(Option.none<CycleRow>())

      const cyclesOf = (planId: number) =>
        sql<CycleRow>`select ${cycleColumns} from billing_cycles where plan_id = ${planId}
          order by duration_days, id`.pipe(Effect.orDie)

      const activeCycle = (id: number) =>
        Effect.gen(function*() {
          const cycle = yield* cycleById(id)
          if (Option.isNone(cycle)) return Option.none()
          const plan = yield* activePlan(cycle.value.plan_id)
          return Option.map(plan, (p) => ({ cycle: cycle.value, plan: p }))
        })

      const quotePromo = (input: { code: string; planId: number; cycleId: number }) =>
        Effect.gen(function*() {
          const plan = yield* activePlan(input.planId)
          const cycle = Option.filter(yield* cycleById(input.cycleId), (c) => c.plan_id === input.planId)
          if (Option.isNone(plan) || Option.isNone(cycle)) {
            const errors: Record<string, Array<string>> = {}
            if (Option.isNone(plan)) errors["plan_id"] = [INVALID_PLAN]
            if (Option.isNone(cycle)) errors["cycle_id"] = [INVALID_CYCLE]
            return yield* Effect.fail(new ValidationError({ errors }))
          }
          const now = yield* clock.now
          const promos = yield* sql<{ type: DiscountType; value: string }>`
            select p.type, p.value::text as value from promo_codes p
            where lower(p.code) = lower(${input.code})
              and (p.expires_at is null or p.expires_at > ${now})
              and (p.max_uses is null or p.uses < p.max_uses)
              and (not exists (select 1 from promo_code_plans r where r.promo_code_id = p.id)
                   or exists (select 1 from promo_code_plans r where r.promo_code_id = p.id and r.plan_id = ${input.planId}))`
            .pipe(Effect.orDie)
          const promo = promos[0]
          if (!promo) return yield* Effect.fail(new BusinessRuleViolation({ message: INVALID_PROMO }))
          const price = toCents(cycle.value.price)
          const { amount } = applyDiscount(price, promo.type, promo.value)
          return {
            code: input.code,
            type: promo.type,
            value: promo.value,
            originalPrice: formatCents(price),
            discountedPrice: formatCents(amount),
            currency: cycle.value.currency
          }
        })

      // each catalogue write is one autocommitted statement: the caches of this process forget the
      // catalogue once it has committed (issue 8; other instances hear the triggers' NOTIFY)
      const createPlan = (plan: PlanChanges & { readonly name: string }) =>
        Effect.flatMap(clock.now, (now) =>
          sql<PlanRow>`insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active, created_at, updated_at)
            values (${plan.name}, ${plan.description ?? ""}, ${plan.bandwidthLimitGb ?? 0}, ${plan.speedLimitMbps ?? null},
                    ${plan.trialDays ?? 0}, ${plan.isActive ?? true}, ${now}, ${now})
            returning ${planColumns}`).pipe(Effect.map((rows) => rows[0]!), Effect.orDie, Effect.zipLeft(catalogChanged))

      const updatePlan = (id: number, changes: PlanChanges) =>
        Effect.gen(function*() {
          const now = yield* clock.now
          const set: Record<string, unknown> = { updated_at: now }
          if (changes.name !== undefined) set["name"] = changes.name
          if (changes.description !== undefined) set["description"] = changes.description
          if (changes.bandwidthLimitGb !== undefined) set["bandwidth_limit_gb"] = changes.bandwidthLimitGb
          if (changes.speedLimitMbps !== undefined) set["speed_limit_mbps"] = changes.speedLimitMbps
          if (changes.trialDays !== undefined) set["trial_days"] = changes.trialDays
          if (changes.isActive !== undefined) set["is_active"] = changes.isActive
          const rows = yield* sql<PlanRow>`update plans set ${sql.update(set)} where id = ${id} returning ${planColumns}`
          return first(rows)
        }).pipe(Effect.orDie, Effect.zipLeft(catalogChanged))

      const createCycle = (planId: number, cycle: { name: string; durationDays: number; priceCents: number; currency: string }) =>
        Effect.flatMap(clock.now, (now) =>
          sql<CycleRow>`insert into billing_cycles (plan_id, name, duration_days, price, currency, created_at)
            values (${planId}, ${cycle.name}, ${cycle.durationDays}, ${formatCents(cycle.priceCents)}::numeric, ${cycle.currency}, ${now})
            returning ${cycleColumns}`).pipe(Effect.map((rows) => rows[0]!), Effect.orDie, Effect.zipLeft(catalogChanged))

      const createPromo = (promo: NewPromo) =>
        sql.withTransaction(Effect.gen(function*() {
          const planIds = [...new Set(promo.planIds)]
          const valid = planIds.filter(isId)
          const found = valid.length === 0
            ? []
            : yield* sql<{ id: number }>`select id from plans where id in ${sql.in(valid)}`
          if (found.length !== planIds.length) {
            return yield* Effect.fail(ValidationError.field("plan_ids", "The selected plan ids is invalid."))
          }
          const now = yield* clock.now
          const rows = yield* sql<PromoRow>`
            insert into promo_codes (code, type, value, expires_at, max_uses, created_at)
            values (${promo.code}, ${promo.type}, ${formatCents(promo.value)}::numeric, ${promo.expiresAt}, ${promo.maxUses}, ${now})
            on conflict ((lower(code))) do nothing
            returning id, code, type, value::text as value, expires_at, max_uses, uses`
          const row = rows[0]
          if (!row) return Option.none()
          for (const planId of planIds) {
            yield* sql`insert into promo_code_plans (promo_code_id, plan_id) values (${row.id}, ${planId})`
          }
          return Option.some({ ...row, plan_ids: planIds.sort((a, b) => a - b) })
        })).pipe(Effect.catchTag("SqlError", Effect.die))

      return {
        activePlans,
        activePlan,
        anyPlan,
        cyclesOf,
        activeCycle,
        quotePromo,
        createPlan,
        updatePlan,
        createCycle,
        createPromo
      }
    })
  )
}
