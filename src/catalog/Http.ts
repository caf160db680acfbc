import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { orNotFound } from "../http/Errors.ts"
import { NotFound, ValidationError } from "../http/Errors.ts"
import { Catalog, type CycleRow, type PlanRow } from "./Catalog.ts"
import { CatalogCache, publicPlan } from "./CatalogCache.ts"
import { CatalogRepo, type PromoWithPlans } from "./CatalogRepo.ts"
import { decimalToNumber, normalizeAmount } from "./Money.ts"


const adminPlan = (r: PlanRow) => ({ ...publicPlan(r), is_active: r.is_active })

const cycle = (r: CycleRow) => ({
  id: r.id,
  name: r.name,
  duration_days: r.duration_days,
  price: normalizeAmount(r.price),
  currency: r.currency
})

const promo = (r: PromoWithPlans) => ({
  id: r.id,
  code: r.code,
  type: r.type,
  value: decimalToNumber(r.value),
  expires_at: r.expires_at ? r.expires_at.toISOString() : null,
  max_uses: r.max_uses,
  uses: r.uses,
  plan_ids: r.plan_ids
})

const CatalogHandlers = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* CatalogRepo
    const cache = yield* CatalogCache
    return handlers
      // the encoded envelope from memory (issue 8); the success schema stays declared for OpenAPI
      .handle("listPlans", () => cache.planList)
      .handle("getPlan", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* orNotFound(yield* repo.activePlan(path.plan))
          const cycles = yield* repo.cyclesOf(found.id)
          return { ...publicPlan(found), cycles: cycles.map(cycle) }
        }))
      .handle("listCycles", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* orNotFound(yield* repo.activePlan(path.plan))
          return (yield* repo.cyclesOf(found.id)).map(cycle)
        }))
      .handle("getCycle", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* orNotFound(yield* repo.activeCycle(path.cycle))
          return { ...cycle(found.cycle), plan: { id: found.plan.id, name: found.plan.name } }
        }))
      .handle("validatePromo", ({ payload }) =>
        Effect.map(
          repo.quotePromo({ code: payload.code, planId: payload.plan_id, cycleId: payload.cycle_id }),
          (quote) => ({
            code: quote.code,
            type: quote.type,
            value: decimalToNumber(quote.value),
            original_price: quote.originalPrice,
            discounted_price: quote.discountedPrice,
            currency: quote.currency
          })
        ))
  }))

const CatalogAdminHandlers = HttpApiBuilder.group(Api, "catalogAdmin", (handlers) =>
  Effect.gen(function*() {
    const repo = yield* CatalogRepo
    return handlers
      .handle("createPlan", ({ payload }) =>
        Effect.map(
          repo.createPlan({
            name: payload.name,
            ...(payload.description !== undefined ? { description: payload.description } : {}),
            ...(payload.bandwidth_limit_gb !== undefined ? { bandwidthLimitGb: payload.bandwidth_limit_gb } : {}),
            ...(payload.speed_limit_mbps !== undefined ? { speedLimitMbps: payload.speed_limit_mbps } : {}),
            ...(payload.trial_days !== undefined ? { trialDays: payload.trial_days } : {}),
            ...(payload.is_active !== undefined ? { isActive: payload.is_active } : {})
          }),
          adminPlan
        ))
      .handle("updatePlan", ({ path, payload }) =>
        Effect.gen(function*() {
          const updated = yield* repo.updatePlan(path.plan, {
            ...(payload.name !== undefined ? { name: payload.name } : {}),
            ...(payload.description !== undefined ? { description: payload.description } : {}),
            ...(payload.bandwidth_limit_gb !== undefined ? { bandwidthLimitGb: payload.bandwidth_limit_gb } : {}),
            ...(payload.speed_limit_mbps !== undefined ? { speedLimitMbps: payload.speed_limit_mbps } : {}),
            ...(payload.trial_days !== undefined ? { trialDays: payload.trial_days } : {}),
            ...(payload.is_active !== undefined ? { isActive: payload.is_active } : {})
          })
          return adminPlan(yield* orNotFound(updated))
        }))
      .handle("createCycle", ({ path, payload }) =>
        Effect.gen(function*() {
          // admins add cycles to inactive plans too (prepared before the plan goes live)
          const found = yield* orNotFound(yield* repo.anyPlan(path.plan))
          const created = yield* repo.createCycle(found.id, {
            name: payload.name,
            durationDays: payload.duration_days,
            priceCents: payload.price,
            currency: payload.currency
          })
          return cycle(created)
        }))
      .handle("createPromo", ({ payload }) =>
        Effect.gen(function*() {
          if (payload.type === "percentage" && payload.value > 100_00) {
            return yield* Effect.fail(ValidationError.field("value", "The value field must not be greater than 100."))
          }
          const created = yield* repo.createPromo({
            code: payload.code,
            type: payload.type,
            value: payload.value,
            expiresAt: payload.expires_at ?? null,
            maxUses: payload.max_uses ?? null,
            planIds: payload.plan_ids ?? []
          })
          return promo(yield* Option.match(created, {
            onNone: () => Effect.fail(ValidationError.field("code", "The code has already been taken.")),
            onSome: Effect.succeed
          }))
        }))
  }))

export const CatalogHttpLive = Layer.mergeAll(CatalogHandlers, CatalogAdminHandlers).pipe(
  Layer.provide(CatalogCache.Live.pipe(Layer.provideMerge(Layer.merge(CatalogRepo.Live, Catalog.Live))))
)
