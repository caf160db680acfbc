import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../accounts/Users.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import type { ServiceStatus } from "./Domain.ts"
import { Services } from "./Services.ts"
import type { UserId } from "../platform/Ids.ts"

const DAY_MS = 86_400_000

/** An admin's grant of a service to a user ([D70]). */
export class ServiceGrants extends Effect.Service<ServiceGrants>()("services/ServiceGrants", {
  effect: Effect.gen(function* () {
    const services = yield* Services
    const catalog = yield* Catalog
    const users = yield* Users
    const clock = yield* AppClock
    return {
      /** any plan (also inactive) and its cycle; the cycle's length unless `expiresAt` is given */
      grant: (
        userId: UserId,
        grant: {
          readonly planId: number
          readonly cycleId: number
          readonly status: Option.Option<ServiceStatus>
          readonly startsAt: Option.Option<Date>
          readonly expiresAt: Option.Option<Date>
          readonly autoRenew: Option.Option<boolean>
        }
      ) =>
        Effect.gen(function* () {
          // field checks (422) before the unknown user (404), as [D11] orders them
          const { cycle, plan } = yield* catalog.anyPlanAndCycle(grant.planId, grant.cycleId)
          const startsAt = Option.getOrElse(grant.startsAt, () => undefined) ?? (yield* clock.now)
          const expiresAt = Option.getOrElse(grant.expiresAt, () => new Date(startsAt.getTime() + cycle.duration_days * DAY_MS))
          if (expiresAt.getTime() <= startsAt.getTime()) {
            return yield* Effect.fail(ValidationError.field("expires_at", "The expires at field must be a date after starts at."))
          }
          if (Option.isNone(yield* users.findById(userId))) return yield* Effect.fail(new NotFound())
          const id = yield* services.create({
            userId,
            planId: plan.id,
            cycleId: cycle.id,
            status: Option.getOrElse(grant.status, (): ServiceStatus => "active"),
            startsAt,
            expiresAt,
            // [D124]: a granted service does not renew unless the admin says so
            autoRenew: Option.getOrElse(grant.autoRenew, () => false)
          })
          return yield* Effect.flatMap(
            services.findById(id),
            Option.match({
              onNone: () => Effect.dieMessage("a granted service is gone"),
              onSome: Effect.succeed
            })
          )
        })
    } as const
  }),
  dependencies: [Services.Default, Catalog.Default, Users.Default]
}) {
  /** issue 35: the grant's rules over `Services.Test` and `Users.Test` (both given to the test too) */
  static readonly Test = ServiceGrants.DefaultWithoutDependencies.pipe(Layer.provideMerge(Users.Test), Layer.provideMerge(Services.Test))
}
