import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { NotFound } from "../platform/Errors.ts"
import { Cancellation } from "../services/Cancellation.ts"
import { Schedules } from "../services/Schedule.ts"
import { Services } from "../services/Services.ts"
import { Balance } from "./Balance.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

const CancelledInvoice = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.NullOr(UserId),
  currency: Schema.String,
  balance_applied: Schema.String,
  promo_code_id: Schema.NullOr(Schema.Int)
})

/**
 * [D111] A customer's cancel and resume, with what billing owes them: a cancelled service is
 * never renewed, so its pending invoices (a renewal, a plan change) are cancelled with it, giving
 * back their balance ([D109]) and promo uses ([D33]). No money moves otherwise: refunds are an
 * admin's ([D110]).
 */
export class Cancellations extends Effect.Service<Cancellations>()("billing/Cancellations", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const services = yield* Services
    const cancellation = yield* Cancellation
    const schedules = yield* Schedules
    const balance = yield* Balance
    const catalog = yield* Catalog
    const gateways = yield* PaymentGateways

    const owned = (userId: UserId, serviceId: ServiceId) =>
      Effect.flatMap(services.findOwned(userId, serviceId), Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed }))

    const cancelPendingRows = SqlSchema.findAll({
      Request: Schema.Number,
      Result: CancelledInvoice,
      execute: (serviceId) => sql`update invoices set status = 'cancelled' where service_id = ${serviceId} and status = 'pending'
        returning id, user_id, currency, balance_applied::text as balance_applied, promo_code_id`
    })
    /** the service's pending invoices become cancelled, giving back balance and promo uses */
    const cancelPendingOf = (serviceId: ServiceId) =>
      Effect.gen(function* () {
        const cancelled = yield* cancelPendingRows(serviceId).pipe(Effect.orDie)
        for (const i of cancelled) {
          yield* balance.returnFrom({ id: i.id, userId: i.user_id, balanceApplied: i.balance_applied, currency: i.currency })
        }
        yield* catalog.releasePromoUses(cancelled.flatMap((i) => (i.promo_code_id === null ? [] : [i.promo_code_id])))
      })

    /** the service as its routes answer it ([D34] with [D108], [D111]) */
    const view = (userId: UserId, serviceId: ServiceId) =>
      Effect.flatMap(owned(userId, serviceId), (s) => Effect.map(schedules.of(s.id), (schedule) => ({ service: s, schedule })))

    const cancel = (userId: UserId, serviceId: ServiceId, at: "period_end" | "now") =>
      Effect.gen(function* () {
        yield* owned(userId, serviceId)
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              if (at === "now") yield* cancellation.now(serviceId, Option.some(userId))
              else yield* cancellation.atPeriodEnd(userId, serviceId)
              yield* cancelPendingOf(serviceId)
            })
          )
          .pipe(Effect.catchTag("SqlError", Effect.die))
        // [D123]: the payment pages of the invoices cancelled with it close
        yield* gateways.closeStale
        return yield* view(userId, serviceId)
      })

    const resume = (userId: UserId, serviceId: ServiceId) =>
      Effect.gen(function* () {
        yield* owned(userId, serviceId)
        yield* cancellation.resume(userId, serviceId)
        return yield* view(userId, serviceId)
      })

    return { cancel, resume, view, cancelPendingOf } as const
  }),
  dependencies: [Services.Default, Cancellation.Default, Schedules.Default, Balance.Default, Catalog.Default, GatewaysLive]
}) {}
