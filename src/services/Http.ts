import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { CurrentUser } from "../http/Auth.ts"
import { okResponse } from "../http/Envelope.ts"
import { orNotFound } from "../http/Errors.ts"
import { AppConfig, GRACE_SPEED_MBPS_DEFAULT } from "../platform/Config.ts"
import { renderDetail, renderListItem, ServiceDetail } from "./Api.ts"
import { ServiceGrants } from "./Grants.ts"
import { Services } from "./Services.ts"
import { Schedules } from "./Schedule.ts"
import type { ScheduledService } from "./ServiceRows.ts"
import { UserId } from "../platform/Ids.ts"

const ServicesHandlers = HttpApiBuilder.group(Api, "services", (handlers) =>
  Effect.gen(function* () {
    const services = yield* Services
    const graceMbps = (yield* AppConfig).graceSpeedMbps ?? GRACE_SPEED_MBPS_DEFAULT
    /**
     * [D108] [D111]: the detail with its `cancel_at` and `scheduled_change` (read with the
     * service); [D124] in grace, the speed its devices get meanwhile (what the portal tells)
     */
    const detailOf = (s: ScheduledService): typeof ServiceDetail.Encoded => {
      const detail = renderDetail(s.service, s.schedule)
      if (s.service.status !== "grace") return detail
      const own = s.service.plan.speedLimitMbps
      return { ...detail, grace_speed_mbps: own === null ? graceMbps : Math.min(own, graceMbps) }
    }
    return (
      handlers
        .handle("listServices", () =>
          Effect.flatMap(CurrentUser, (user) =>
            // [D108] [D111]: each item with its `cancel_at` and `scheduled_change`, in one read
            Effect.map(services.listScheduledOf(user.userId), (list) => list.map((s) => renderListItem(s.service, s.schedule)))
          )
        )
        // [D34]: the newest active or suspended service not past expires_at
        .handle("currentService", () =>
          Effect.flatMap(CurrentUser, (user) =>
            Effect.map(Effect.flatMap(services.currentScheduled(user.userId), orNotFound), (s) => okResponse(ServiceDetail, detailOf(s)))
          )
        )
        .handle("getService", ({ path }) =>
          Effect.flatMap(CurrentUser, (user) => Effect.map(Effect.flatMap(services.findOwnedScheduled(user.userId, path.service), orNotFound), detailOf))
        )
        .handle("setAutoRenew", ({ path, payload }) =>
          Effect.flatMap(CurrentUser, (user) =>
            Effect.map(Effect.flatMap(services.setAutoRenew(user.userId, path.service, payload.auto_renew), orNotFound), (autoRenew) => ({
              message: "Auto-renew updated.",
              data: { auto_renew: autoRenew }
            }))
          )
        )
    )
  })
)

const ServicesAdminHandlers = HttpApiBuilder.group(Api, "servicesAdmin", (handlers) =>
  Effect.gen(function* () {
    const services = yield* Services
    const grants = yield* ServiceGrants
    const schedules = yield* Schedules
    return handlers
      .handle("grantService", ({ path, payload }) =>
        Effect.map(
          grants.grant(UserId.make(path.user), {
            planId: payload.plan_id,
            cycleId: payload.cycle_id,
            status: Option.fromNullable(payload.status),
            startsAt: Option.fromNullable(payload.starts_at),
            expiresAt: Option.fromNullable(payload.expires_at),
            autoRenew: Option.fromNullable(payload.auto_renew)
          }),
          renderDetail
        )
      )
      .handle("updateService", ({ path, payload }) =>
        Effect.flatMap(
          Effect.flatMap(
            services.update(path.service, {
              status: Option.fromNullable(payload.status),
              expiresAt: Option.fromNullable(payload.expires_at)
            }),
            orNotFound
          ),
          (s) => Effect.map(schedules.of(s.id), (schedule) => renderDetail(s, schedule))
        )
      )
  })
)

export const ServicesHttpLive = Layer.mergeAll(ServicesHandlers, ServicesAdminHandlers).pipe(
  Layer.provide(Layer.mergeAll(Services.Default, ServiceGrants.Default, Schedules.Default))
)
