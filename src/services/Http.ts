import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { okResponse } from "../http/Envelope.ts"
import { orNotFound } from "../http/Errors.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { CurrentUser } from "../http/Auth.ts"
import { NotFound, ValidationError } from "../http/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { renderDetail, renderListItem, Services } from "./Services.ts"
import { ServiceDetail } from "./ServicesApi.ts"

const DAY_MS = 86_400_000

const ServicesHandlers = HttpApiBuilder.group(Api, "services", (handlers) =>
  Effect.gen(function*() {
    const services = yield* Services
    return handlers
      .handle("listServices", () =>
        Effect.flatMap(CurrentUser, (user) => Effect.map(services.listOf(user.userId), (rows) => rows.map(renderListItem))))
      .handle("currentService", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          // [D34]: the newest active or suspended service not past expires_at
          return okResponse(ServiceDetail, renderDetail(yield* orNotFound(yield* services.current(user.userId))))
        }))
      .handle("getService", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          return renderDetail(yield* orNotFound(yield* services.findOwned(user.userId, path.service)))
        }))
      .handle("setAutoRenew", ({ path, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const autoRenew = yield* orNotFound(yield* services.setAutoRenew(user.userId, path.service, payload.auto_renew))
          return { message: "Auto-renew updated.", data: { auto_renew: autoRenew } }
        }))
  }))

const ServicesAdminHandlers = HttpApiBuilder.group(Api, "servicesAdmin", (handlers) =>
  Effect.gen(function*() {
    const services = yield* Services
    const catalog = yield* Catalog
    const clock = yield* AppClock
    return handlers
      .handle("grantService", ({ path, payload }) =>
        Effect.gen(function*() {
          // field checks (422) before the unknown user (404), as [D11] orders them
          const { cycle, plan } = yield* catalog.anyPlanAndCycle(payload.plan_id, payload.cycle_id)
          const now = yield* clock.now
          const startsAt = payload.starts_at ?? now
          const expiresAt = payload.expires_at ?? new Date(startsAt.getTime() + cycle.durationDays * DAY_MS)
          if (expiresAt.getTime() <= startsAt.getTime()) {
            return yield* Effect.fail(ValidationError.field("expires_at", "The expires at field must be a date after starts at."))
          }
          if (!(yield* services.userExists(path.user))) return yield* Effect.fail(new NotFound())
          const id = yield* services.create({
            userId: path.user,
            planId: plan.id,
            cycleId: cycle.id,
            status: payload.status ?? "active",
            startsAt,
            expiresAt,
            autoRenew: payload.auto_renew ?? true
          })
          return renderDetail(yield* orNotFound(yield* services.find(id)))
        }))
      .handle("updateService", ({ path, payload }) =>
        Effect.gen(function*() {
          const id = yield* orNotFound(yield* services.update(path.service, {
            status: Option.fromNullable(payload.status),
            expiresAt: Option.fromNullable(payload.expires_at)
          }))
          return renderDetail(yield* orNotFound(yield* services.find(id)))
        }))
  }))

export const ServicesHttpLive = Layer.mergeAll(ServicesHandlers, ServicesAdminHandlers).pipe(
  Layer.provide(Layer.mergeAll(Services.Live, Catalog.Live))
)
