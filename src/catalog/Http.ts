import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { BearerTokens, requestPrincipal } from "../http/Auth.ts"
import { orNotFound } from "../http/Errors.ts"
import { Catalog } from "./Catalog.ts"
import { PromoUses } from "./PromoUses.ts"

const CatalogHandlers = HttpApiBuilder.group(Api, "catalog", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const tokens = yield* BearerTokens
    const promoUses = yield* PromoUses
    return (
      handlers
        // the encoded envelope from memory; the success schema stays declared for OpenAPI
        .handle("listPlans", () => Effect.map(catalog.planListJson, (body) => HttpServerResponse.uint8Array(body, { contentType: "application/json" })))
        .handle("getPlan", ({ path }) =>
          Effect.gen(function* () {
            const plan = yield* orNotFound(yield* catalog.activePlan(path.plan))
            return { ...plan, cycles: yield* catalog.cyclesOf(plan.id) }
          })
        )
        .handle("listCycles", ({ path }) => Effect.flatMap(Effect.flatMap(catalog.activePlan(path.plan), orNotFound), (plan) => catalog.cyclesOf(plan.id)))
        .handle("getCycle", ({ path }) => Effect.map(Effect.flatMap(catalog.activeCycle(path.cycle), orNotFound), ({ cycle, plan }) => ({ ...cycle, plan })))
        // [D33]: the caller, when a live token comes along: their own pending and paid invoices
        // count against the code's per-user limit (rev. 2); an anonymous one meets only the overall ones
        .handle("validatePromo", ({ payload }) =>
          Effect.flatMap(requestPrincipal(tokens), (caller) =>
            catalog.quotePromo({
              code: payload.code,
              planId: payload.plan_id,
              cycleId: payload.cycle_id,
              usesOfCaller: Option.map(caller, (user) => (promoId: number) => promoUses.of(user.userId, promoId))
            })
          )
        )
    )
  })
)

const CatalogAdminHandlers = HttpApiBuilder.group(Api, "catalogAdmin", (handlers) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    return (
      handlers
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
            })
          )
        )
        .handle("createPromo", ({ payload }) =>
          catalog.createPromo({
            code: payload.code,
            type: payload.type,
            value: payload.value,
            expiresAt: payload.expires_at ?? null,
            maxUses: payload.max_uses ?? null,
            maxUsesPerUser: payload.max_uses_per_user === undefined ? 1 : payload.max_uses_per_user,
            planIds: payload.plan_ids ?? []
          })
        )
    )
  })
)

/** the catalogue's handlers; its `PromoUses` port is provided by billing through `DomainLive` */
export const CatalogHttpLive = Layer.mergeAll(CatalogHandlers, CatalogAdminHandlers).pipe(Layer.provide(Catalog.Default))
