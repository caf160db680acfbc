import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CatalogRepo, NewPromo, PlanUpdate } from "./CatalogRepo.ts"
import type { Cycle, Plan, PromoCode } from "./Domain.ts"
import { formatCents } from "./Money.ts"
import { PlanId } from "../platform/Ids.ts"

type Repo = Parameters<(typeof CatalogRepo)["make"]>[0]

/**
 * `CatalogRepo.Test` (issue 35): the catalogue's tables in memory, with the rules the SQL and
 * the schema hold (a code unique in any case, a promo that applies by date, uses and plan, a use
 * counted only below `max_uses`, uses given back never below 0), so the catalogue's rules run
 * as Effect programs without a database.
 */
export const memoryCatalogRepo = (): Repo => {
  const plans = new Map<number, Plan>()
  const cycles = new Map<number, Cycle>()
  const promos = new Map<number, PromoCode>()
  const promoPlans = new Map<number, ReadonlyArray<number>>()
  let nextId = 1

  const defined = (changes: PlanUpdate): Partial<Plan> =>
    Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<Plan>

  const updatePlan = (id: number, changes: PlanUpdate) =>
    Effect.sync(() => {
      const current = plans.get(id)
      if (current === undefined) return Option.none<Plan>()
      const updated: Plan = { ...current, ...defined(changes) }
      plans.set(id, updated)
      return Option.some(updated)
    })

  const applies = (p: PromoCode, code: string, planId: number, now: Date) => {
    const restricted = promoPlans.get(p.id) ?? []
    return (
      p.code.toLowerCase() === code.toLowerCase() &&
      (p.expires_at === null || p.expires_at.getTime() > now.getTime()) &&
      (p.max_uses === null || p.uses < p.max_uses) &&
      (restricted.length === 0 || restricted.includes(planId))
    )
  }

  return {
    everything: Effect.sync(() => ({
      plans: [...plans.values()].sort((a, b) => a.id - b.id),
      cycles: [...cycles.values()].sort((a, b) => a.duration_days - b.duration_days || a.id - b.id)
    })),
    createPlan: (plan) =>
      Effect.sync(() => {
        const created: Plan = {
          id: PlanId.make(nextId++),
          name: plan.name,
          description: plan.description ?? "",
          bandwidth_limit_gb: plan.bandwidth_limit_gb ?? 0,
          speed_limit_mbps: plan.speed_limit_mbps ?? null,
          trial_days: plan.trial_days ?? 0,
          device_limit: plan.device_limit ?? 5,
          usage_reset: plan.usage_reset ?? "monthly",
          quota_action: plan.quota_action ?? "suspend",
          throttle_mbps: plan.throttle_mbps ?? null,
          is_active: plan.is_active ?? true
        }
        plans.set(created.id, created)
        return created
      }),
    updatePlan,
    updatePlanChecked: <E>(id: number, check: (current: Plan) => Effect.Effect<PlanUpdate, E>) =>
      Effect.suspend(() => {
        const current = plans.get(id)
        if (current === undefined) return Effect.succeed(Option.none<Plan>())
        return Effect.flatMap(check(current), (changes) => updatePlan(id, changes))
        // the live repository's type takes its own SqlError out of what the check may fail with
      }) as Effect.Effect<Option.Option<Plan>, Exclude<E, { _tag: "SqlError" }>>,
    createCycle: (cycle) =>
      Effect.sync(() => {
        const created: Cycle = {
          id: nextId++,
          plan_id: PlanId.make(cycle.planId),
          name: cycle.name,
          duration_days: cycle.durationDays,
          price: formatCents(cycle.priceCents),
          currency: cycle.currency
        }
        cycles.set(created.id, created)
        return created
      }),
    existingPlanIds: (ids) => Effect.sync(() => ids.filter((id) => plans.has(id))),
    insertPromo: (promo: NewPromo) =>
      Effect.sync(() => {
        if ([...promos.values()].some((p) => p.code.toLowerCase() === promo.code.toLowerCase())) return Option.none<PromoCode>()
        const created: PromoCode = {
          id: nextId++,
          code: promo.code,
          type: promo.type,
          value: formatCents(promo.value),
          expires_at: promo.expiresAt,
          max_uses: promo.maxUses,
          max_uses_per_user: promo.maxUsesPerUser,
          uses: 0
        }
        promos.set(created.id, created)
        promoPlans.set(created.id, [...promo.planIds])
        return Option.some(created)
      }),
    applicablePromo: ({ code, now, planId }) => Effect.sync(() => Option.fromNullable([...promos.values()].find((p) => applies(p, code, planId, now)))),
    countPromoUse: (id, now) =>
      Effect.sync(() => {
        const p = promos.get(id)
        if (p === undefined || (p.expires_at !== null && p.expires_at.getTime() <= now.getTime()) || (p.max_uses !== null && p.uses >= p.max_uses)) {
          return Option.none<PromoCode>()
        }
        const counted = { ...p, uses: p.uses + 1 }
        promos.set(id, counted)
        return Option.some(counted)
      }),
    releasePromoUses: (ids) =>
      Effect.sync(() => {
        for (const id of ids) {
          const p = promos.get(id)
          if (p !== undefined) promos.set(id, { ...p, uses: Math.max(p.uses - 1, 0) })
        }
      }),
    promoPlanIds: (id) => Effect.sync(() => [...(promoPlans.get(id) ?? [])].sort((a, b) => a - b))
  }
}
