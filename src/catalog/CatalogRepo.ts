import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { memoryCatalogRepo } from "./CatalogMemory.ts"
import { Cycle, DiscountType, Plan, PromoCode, QuotaAction, UsageReset } from "./Domain.ts"
import { formatCents } from "./Money.ts"

/** What an admin sets on a plan ([D70]); each field optional on update. */
const PlanUpdate = Schema.Struct({
  name: Schema.optional(Schema.String),
  description: Schema.optional(Schema.String),
  bandwidth_limit_gb: Schema.optional(Schema.Int),
  speed_limit_mbps: Schema.optional(Schema.NullOr(Schema.Int)),
  trial_days: Schema.optional(Schema.Int),
  device_limit: Schema.optional(Schema.Int),
  usage_reset: Schema.optional(UsageReset),
  quota_action: Schema.optional(QuotaAction),
  throttle_mbps: Schema.optional(Schema.NullOr(Schema.Int)),
  is_active: Schema.optional(Schema.Boolean)
})
export type PlanUpdate = typeof PlanUpdate.Type
const NewPlan = Schema.Struct({ ...PlanUpdate.fields, name: Schema.String })

export interface NewPromo {
  readonly code: string
  readonly type: DiscountType
  /** cents for `fixed`, basis points for `percentage` (both two-decimal numerics) */
  readonly value: number
  readonly expiresAt: Date | null
  readonly maxUses: number | null
  readonly maxUsesPerUser: number | null
  readonly planIds: ReadonlyArray<number>
}

const Id = Schema.Struct({ id: Schema.Int })
const Ids = Schema.Array(Schema.Int)

/**
 * The catalogue's tables (plans, billing_cycles, promo_codes, promo_code_plans). Each write is
 * one autocommitted statement or transaction; the caller tells the caches once it committed.
 */
export class CatalogRepo extends Effect.Service<CatalogRepo>()("catalog/CatalogRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock

    const planColumns = sql`id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, device_limit, usage_reset, quota_action, throttle_mbps, is_active`
    const cycleColumns = sql`id, plan_id, name, duration_days, price::text as price, currency`
    const promoColumns = sql`id, code, type, value::text as value, expires_at, max_uses, max_uses_per_user, uses`

    const allPlans = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Plan,
      execute: () => sql`select ${planColumns} from plans order by id`
    })
    const allCycles = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Cycle,
      execute: () => sql`select ${cycleColumns} from billing_cycles order by duration_days, id`
    })
    /** the whole catalogue (it is small): what the in-memory snapshot holds */
    const everything = Effect.all({ plans: allPlans(undefined), cycles: allCycles(undefined) }).pipe(Effect.orDie)

    const insertPlan = SqlSchema.single({
      Request: Schema.Struct({ plan: NewPlan, now: Schema.DateFromSelf }),
      Result: Plan,
      execute: ({ now, plan: p }) => {
        return sql`insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, device_limit, usage_reset, quota_action, throttle_mbps, is_active, created_at, updated_at)
          values (${p.name}, ${p.description ?? ""}, ${p.bandwidth_limit_gb ?? 0}, ${p.speed_limit_mbps ?? null},
                  ${p.trial_days ?? 0}, ${p.device_limit ?? 5}, ${p.usage_reset ?? "monthly"}, ${p.quota_action ?? "suspend"},
                  ${p.throttle_mbps ?? null}, ${p.is_active ?? true}, ${now}, ${now})
          returning ${planColumns}`
      }
    })
    const createPlan = (plan: PlanUpdate & { readonly name: string }) => Effect.flatMap(clock.now, (now) => insertPlan({ plan, now })).pipe(Effect.orDie)

    const updatePlanRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Int, set: Schema.Record({ key: Schema.String, value: Schema.Unknown }) }),
      Result: Plan,
      execute: ({ id, set }) => sql`update plans set ${sql.update(set)} where id = ${id} returning ${planColumns}`
    })
    const updatePlan = (id: number, changes: PlanUpdate) =>
      Effect.gen(function* () {
        const set: Record<string, unknown> = { updated_at: yield* clock.now }
        for (const [key, value] of Object.entries(changes)) if (value !== undefined) set[key] = value
        return yield* updatePlanRow({ id, set })
      }).pipe(Effect.orDie)

    const lockedPlan = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Plan,
      execute: (planId) => sql`select ${planColumns} from plans where id = ${planId} for update`
    })

    /**
     * Issue 34: the plan row locked, the changes checked against the plan as it then is, and
     * written, in one transaction: two admins' updates take turns, so together they cannot break
     * a rule each passed alone (the `throttle_mbps` CHECK). None when the plan does not exist.
     */
    const updatePlanChecked = <E>(id: number, check: (current: Plan) => Effect.Effect<PlanUpdate, E>) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const current = yield* Effect.orDie(lockedPlan(id))
            if (Option.isNone(current)) return Option.none<Plan>()
            return yield* updatePlan(id, yield* check(current.value))
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))

    const insertCycle = SqlSchema.single({
      Request: Schema.Struct({
        planId: Schema.Number,
        name: Schema.String,
        durationDays: Schema.Number,
        priceCents: Schema.Number,
        currency: Schema.String,
        now: Schema.DateFromSelf
      }),
      Result: Cycle,
      execute: (cycle) =>
        sql`insert into billing_cycles (plan_id, name, duration_days, price, currency, created_at)
          values (${cycle.planId}, ${cycle.name}, ${cycle.durationDays}, ${formatCents(cycle.priceCents)}::numeric, ${cycle.currency}, ${cycle.now})
          returning ${cycleColumns}`
    })
    const createCycle = (cycle: { planId: number; name: string; durationDays: number; priceCents: number; currency: string }) =>
      Effect.flatMap(clock.now, (now) => insertCycle({ ...cycle, now })).pipe(Effect.orDie)

    const planIdsIn = SqlSchema.findAll({ Request: Ids, Result: Id, execute: (list) => sql`select id from plans where id in ${sql.in(list)}` })
    const existingPlanIds = (ids: ReadonlyArray<number>) =>
      ids.length === 0
        ? Effect.succeed([] as ReadonlyArray<number>)
        : planIdsIn(ids).pipe(
            Effect.map((rows) => rows.map((r) => r.id)),
            Effect.orDie
          )

    const insertPromoRow = SqlSchema.findOne({
      Request: Schema.Struct({
        code: Schema.String,
        type: DiscountType,
        value: Schema.Number,
        expiresAt: Schema.NullOr(Schema.DateFromSelf),
        maxUses: Schema.NullOr(Schema.Number),
        maxUsesPerUser: Schema.NullOr(Schema.Number),
        now: Schema.DateFromSelf
      }),
      Result: PromoCode,
      execute: (promo) => sql`
        insert into promo_codes (code, type, value, expires_at, max_uses, max_uses_per_user, created_at)
        values (${promo.code}, ${promo.type}, ${formatCents(promo.value)}::numeric, ${promo.expiresAt}, ${promo.maxUses},
                ${promo.maxUsesPerUser}, ${promo.now})
        on conflict ((lower(code))) do nothing
        returning ${promoColumns}`
    })
    /** the promo in the transaction, none when the code is taken (case-insensitively) */
    const insertPromo = (promo: NewPromo) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const row = yield* insertPromoRow({ ...promo, now })
        if (row._tag === "Some" && promo.planIds.length > 0) {
          yield* sql`insert into promo_code_plans ${sql.insert(promo.planIds.map((planId) => ({ promo_code_id: row.value.id, plan_id: planId })))}`
        }
        return row
      }).pipe(sql.withTransaction, Effect.orDie)

    const applies = (code: string, planId: number, now: Date) => sql`
      lower(p.code) = lower(${code})
      and (p.expires_at is null or p.expires_at > ${now})
      and (p.max_uses is null or p.uses < p.max_uses)
      and (not exists (select 1 from promo_code_plans r where r.promo_code_id = p.id)
           or exists (select 1 from promo_code_plans r where r.promo_code_id = p.id and r.plan_id = ${planId}))`

    const PromoQuery = Schema.Struct({ code: Schema.String, planId: Schema.Int, now: Schema.DateFromSelf })

    /** a code that applies to the plan now and is not used up overall; counts nothing */
    const applicablePromo = SqlSchema.findOne({
      Request: PromoQuery,
      Result: PromoCode,
      execute: ({ code, now, planId }) => sql`select ${promoColumns} from promo_codes p where ${applies(code, planId, now)}`
    })

    /**
     * Counts one use with one guarded statement: a concurrent order waits on the row lock, then
     * re-checks the uses, so `max_uses` is never passed. Run it in the order's transaction.
     */
    const countPromoUse = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf }),
      Result: PromoCode,
      execute: ({ id, now }) => sql`
        update promo_codes p set uses = p.uses + 1
        where p.id = ${id} and (p.expires_at is null or p.expires_at > ${now}) and (p.max_uses is null or p.uses < p.max_uses)
        returning ${promoColumns}`
    })

    /** gives uses back (invoices with the promo were cancelled); never below 0 */
    const releasePromoUses = (promoIds: ReadonlyArray<number>) =>
      Effect.forEach(groupCounts(promoIds), ([id, n]) => sql`update promo_codes set uses = greatest(uses - ${n}, 0) where id = ${id}`, { discard: true }).pipe(
        Effect.orDie
      )

    const promoPlanIds = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ plan_id: Schema.Int }),
      execute: (id) => sql`select plan_id from promo_code_plans where promo_code_id = ${id} order by plan_id`
    })

    return {
      everything,
      createPlan,
      updatePlan,
      updatePlanChecked,
      createCycle,
      existingPlanIds,
      insertPromo,
      applicablePromo: (q: typeof PromoQuery.Type) => applicablePromo(q).pipe(Effect.orDie),
      countPromoUse: (id: number, now: Date) => countPromoUse({ id, now }).pipe(Effect.orDie),
      releasePromoUses,
      promoPlanIds: (id: number) =>
        promoPlanIds(id).pipe(
          Effect.map((rows) => rows.map((r) => r.plan_id)),
          Effect.orDie
        )
    } as const
  })
}) {
  /** issue 35: the tables in memory (`CatalogMemory.ts`), fresh for each layer built */
  static readonly Test: Layer.Layer<CatalogRepo> = Layer.sync(CatalogRepo, () => CatalogRepo.make(memoryCatalogRepo()))
}

const groupCounts = (ids: ReadonlyArray<number>) => {
  const counts = new Map<number, number>()
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1)
  return [...counts.entries()].sort(([a], [b]) => a - b)
}
