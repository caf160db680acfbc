import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { Invoices } from "../billing/Invoices.ts"
import { BearerTokens, requestPrincipal } from "../http/Auth.ts"
import { orNotFound, ValidationError } from "../http/Errors.ts"
import { Catalog } from "./Catalog.ts"

const CatalogHandlers = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const tokens = yield* BearerTokens
    const invoices = yield* Invoices
    return handlers
      // the encoded envelope from memory; the success schema stays declared for OpenAPI
      .handle("listPlans", () =>
        Effect.map(catalog.planListJson, (body) => HttpServerResponse.uint8Array(body, { contentType: "application/json" })))
      .handle("getPlan", ({ path }) =>
        Effect.gen(function*() {
          const plan = yield* orNotFound(yield* catalog.activePlan(path.plan))
          return { ...plan, cycles: yield* catalog.cyclesOf(plan.id) }
        }))
      .handle("listCycles", ({ path }) =>
        Effect.flatMap(Effect.flatMap(catalog.activePlan(path.plan), orNotFound), (plan) => catalog.cyclesOf(plan.id)))
      .handle("getCycle", ({ path }) =>
        Effect.map(Effect.flatMap(catalog.activeCycle(path.cycle), orNotFound), ({ cycle, plan }) => ({ ...cycle, plan })))
      // public; with a live token the caller's own uses count too ([D33] rev. 2)
      .handle("validatePromo", ({ payload }) =>
        Effect.gen(function*() {
          const caller = yield* requestPrincipal(tokens)
          const quote = yield* catalog.quotePromo({
            code: payload.code,
            planId: payload.plan_id,
            cycleId: payload.cycle_id,
            usesOfCaller: Option.map(caller, (user) => (promoId: number) => invoices.promoUsesOf(user.userId, promoId))
          })
          return {
            code: quote.code,
            type: quote.type,
            value: Number(quote.value),
            original_price: quote.originalPrice,
            discounted_price: quote.discountedPrice,
            currency: quote.currency
          }
        }))
  }))

const CatalogAdminHandlers = HttpApiBuilder.group(Api, "catalogAdmin", (handlers) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    return handlers
      .handle("createPlan", ({ payload }) => catalog.createPlan(payload))
      .handle("updatePlan", ({ path, payload }) => Effect.flatMap(catalog.updatePlan(path.plan, payload), orNotFound))
      // admins add cycles to inactive plans too (prepared before the plan goes live)
      .handle("createCycle", ({ path, payload }) =>
        Effect.flatMap(Effect.flatMap(catalog.anyPlan(path.plan), orNotFound), (plan) =>
          catalog.createCycle({
            planId: plan.id,
            name: payload.name,
            durationDays: payload.duration_days,
            priceCents: payload.price,
            currency: payload.currency
          })))
      .handle("createPromo", ({ payload }) =>
        Effect.gen(function*() {
          if (payload.type === "percentage" && payload.value > 100_00) {
            return yield* Effect.fail(ValidationError.field("value", "The value field must not be greater than 100."))
          }
          const created = yield* catalog.createPromo({
            code: payload.code,
            type: payload.type,
            value: payload.value,
            expiresAt: payload.expires_at ?? null,
            maxUses: payload.max_uses ?? null,
            maxUsesPerUser: payload.max_uses_per_user === undefined ? 1 : payload.max_uses_per_user,
            planIds: payload.plan_ids ?? []
          })
          return yield* Option.match(created, {
            onNone: () => Effect.fail(ValidationError.field("code", "The code has already been taken.")),
            onSome: Effect.succeed
          })
        }))
  }))

export const CatalogHttpLive = Layer.mergeAll(CatalogHandlers, CatalogAdminHandlers).pipe(
  Layer.provide(Layer.mergeAll(Catalog.Default, Invoices.Default))
)
