import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { CurrentUser } from "../../http/Auth.ts"
import { renderDetail } from "../../services/Api.ts"
import * as Option from "effect/Option"
import { orNotFound, ValidationError } from "../../http/Errors.ts"
import type { Subscription } from "../../services/Domain.ts"
import { Schedules } from "../../services/Schedule.ts"
import { Services } from "../../services/Services.ts"
import { Cancellations } from "../Cancellations.ts"
import { Invoices } from "../Invoices.ts"
import { PlanChanges } from "../PlanChanges.ts"
import { ServiceId } from "../../platform/Ids.ts"

const SubscriptionsHandlers = HttpApiBuilder.group(Api, "subscriptions", (handlers) =>
  Effect.gen(function* () {
    const cancellations = yield* Cancellations
    const changes = yield* PlanChanges
    const invoices = yield* Invoices
    const schedules = yield* Schedules
    const services = yield* Services
    const detailOf = (s: Subscription) => Effect.map(schedules.of(s.id), (schedule) => renderDetail(s, schedule))
    return handlers
      .handle("cancelService", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(cancellations.cancel(user.userId, ServiceId.make(path.service), payload.at), (v) => renderDetail(v.service, v.schedule))
        )
      )
      .handle("resumeService", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(cancellations.resume(user.userId, ServiceId.make(path.service)), (v) => renderDetail(v.service, v.schedule))
        )
      )
      .handle("changeQuote", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const user = yield* CurrentUser
          yield* Effect.flatMap(services.findOwned(user.userId, ServiceId.make(path.service)), orNotFound)
          const { cycle_id, plan_id } = urlParams
          if (plan_id === undefined || cycle_id === undefined) {
            const errors: Record<string, Array<string>> = {}
            if (plan_id === undefined) errors["plan_id"] = ["The plan id field is required."]
            if (cycle_id === undefined) errors["cycle_id"] = ["The cycle id field is required."]
            return yield* Effect.fail(new ValidationError({ errors }))
          }
          return yield* changes.quote(user.userId, ServiceId.make(path.service), { planId: plan_id, cycleId: cycle_id })
        })
      )
      .handle("changePlan", ({ path, payload }) =>
        Effect.gen(function* () {
          const user = yield* CurrentUser
          const done = yield* changes.change(user.userId, ServiceId.make(path.service), {
            planId: payload.plan_id,
            cycleId: payload.cycle_id,
            gateway: payload.gateway,
            saveCard: payload.save_card
          })
          if (Option.isSome(done.invoiceId)) {
            const invoice = yield* Effect.flatMap(invoices.byId(done.invoiceId.value), orNotFound)
            return yield* invoices.detail(invoice)
          }
          return yield* Effect.flatMap(Effect.flatMap(services.findOwned(user.userId, ServiceId.make(path.service)), orNotFound), detailOf)
        })
      )
      .handle("removeChange", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => Effect.flatMap(changes.removeScheduled(user.userId, ServiceId.make(path.service)), detailOf))
      )
  })
)

export const SubscriptionsHttpLive = SubscriptionsHandlers.pipe(
  Layer.provide(Layer.mergeAll(Cancellations.Default, PlanChanges.Default, Invoices.Default, Schedules.Default, Services.Default))
)
