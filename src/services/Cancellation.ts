import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { AppClock } from "../platform/Clock.ts"
import { BusinessRuleViolation } from "../platform/Errors.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

const Cancelled = Schema.Struct({
  id: Schema.Int,
  user_id: UserId,
  plan_id: Schema.Int,
  cycle_id: Schema.Int,
  status: Schema.String,
  expires_at: Schema.DateFromSelf,
  cancel_at: Schema.NullOr(Schema.DateFromSelf)
})
type Cancelled = typeof Cancelled.Type

/** [D111]: cancelling a service that is not active (or suspended, for `now`) */
export const cannotCancel = () => new BusinessRuleViolation({ message: "Service cannot be cancelled." })
/** [D111]: resuming a service that is not cancelling at its period's end */
export const cannotResume = () => new BusinessRuleViolation({ message: "Service cannot be resumed." })

/**
 * [D111] Cancel at the period's end, cancel now, resume: the `services` rows of this room. Each
 * write is one conditional statement (a second cancel, or a resume racing the expiry, finds
 * nothing to change), with the `service.cancelled` event ([D101]) and the confirmation mail
 * ([D96]) in its transaction. Cancelling now stops VPN access at once ([D91]): access follows the
 * service's status, and the node change log records it.
 */
export class Cancellation extends Effect.Service<Cancellation>()("services/Cancellation", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const domainEvents = yield* DomainEvents
    const notifications = yield* Notifications

    const returning = sql`returning id, user_id, plan_id, cycle_id, status, expires_at, cancel_at`

    const announce = (s: Cancelled, at: "period_end" | "now", now: Date) =>
      Effect.gen(function* () {
        const endsAt = at === "now" ? now : s.expires_at
        yield* domainEvents.emit({
          type: "service.cancelled",
          data: {
            id: s.id,
            user_id: s.user_id,
            plan_id: s.plan_id,
            cycle_id: s.cycle_id,
            status: s.status,
            at,
            cancel_at: s.cancel_at === null ? null : s.cancel_at.toISOString(),
            expires_at: s.expires_at.toISOString()
          }
        })
        const { plan } = yield* Effect.orDie(catalog.anyPlanAndCycle(s.plan_id, s.cycle_id))
        yield* notifications.notify({
          userId: s.user_id,
          kind: "service-cancelled",
          dedupeKey: `service-cancelled:${s.id}:${at}:${now.toISOString()}`,
          view: { service_id: s.id, plan_name: plan.name, at_period_end: at === "period_end", ends_at: endsAt }
        })
      })

    const finish = <E>(write: Effect.Effect<Option.Option<Cancelled>, E>, at: "period_end" | "now", fail: () => BusinessRuleViolation) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const now = yield* clock.now
            const row = yield* write
            if (Option.isNone(row)) return yield* Effect.fail(fail())
            yield* announce(row.value, at, now)
            return row.value
          })
        )
        .pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.tap(() => Effect.zipRight(domainEvents.wake, notifications.wake))
        )

    const periodEndRow = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Number, serviceId: Schema.Number, now: Schema.DateFromSelf }),
      Result: Cancelled,
      execute: ({ now, serviceId, userId }) => sql`
        update services set auto_renew = false, cancel_at = expires_at, updated_at = ${now}
        where id = ${serviceId} and user_id = ${userId} and status = 'active' and expires_at > ${now} and cancel_at is null
        ${returning}`
    })
    const nowRow = SqlSchema.findOne({
      Request: Schema.Struct({ serviceId: Schema.Number, userId: Schema.NullOr(Schema.Number), at: Schema.DateFromSelf }),
      Result: Cancelled,
      execute: ({ at, serviceId, userId }) => sql`
        update services set status = 'cancelled', auto_renew = false, cancel_at = null,
          scheduled_plan_id = null, scheduled_cycle_id = null, updated_at = ${at}
        where id = ${serviceId} ${userId === null ? sql`` : sql`and user_id = ${userId}`}
          and status in ('active', 'suspended', 'pending')
        ${returning}`
    })

    /** [D111] `period_end`: the user's active service stops renewing and ends at `expires_at` */
    const atPeriodEnd = (userId: UserId, serviceId: ServiceId) =>
      finish(Effect.flatMap(clock.now, (now) => periodEndRow({ userId, serviceId, now })).pipe(Effect.orDie), "period_end", cannotCancel)

    /**
     * [D111] `now` (and [D110] `end_service`): the service is cancelled at once; `userId` none
     * for an admin's refund, which may end any user's service.
     */
    const now = (serviceId: ServiceId, userId: Option.Option<number>) =>
      finish(Effect.flatMap(clock.now, (at) => nowRow({ serviceId, userId: Option.getOrNull(userId), at })).pipe(Effect.orDie), "now", cannotCancel)

    /** [D111]: undoes a `period_end` cancel before it happens */
    const resumeRow = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Number, serviceId: Schema.Number, at: Schema.DateFromSelf }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: ({ at, serviceId, userId }) => sql`
            update services set auto_renew = true, cancel_at = null, updated_at = ${at}
            where id = ${serviceId} and user_id = ${userId} and status = 'active' and cancel_at is not null and cancel_at > ${at}
            returning id`
    })
    const resume = (userId: UserId, serviceId: ServiceId) =>
      Effect.flatMap(clock.now, (at) => resumeRow({ userId, serviceId, at })).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(cannotResume()), onSome: (r) => Effect.succeed(r.id) }))
      )

    return { atPeriodEnd, now, resume } as const
  }),
  dependencies: [Catalog.Default, Notifications.Default]
}) {}
