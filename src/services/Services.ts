import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Catalog } from "../catalog/Catalog.ts"
import type { Cycle, Plan } from "../catalog/Domain.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import type { ServiceStatus, Subscription } from "./Domain.ts"
import { ServiceRows } from "./ServiceRows.ts"
import { ServiceId, UserId, PlanId } from "../platform/Ids.ts"

const DAY_MS = 86_400_000

/**
 * The services room's rules: a payment or a trial starts or extends a service, services expire,
 * an admin changes one; each with its event ([D101]). The statements are `ServiceRows.ts`.
 */
export class Services extends Effect.Service<Services>()("services/Services", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const domainEvents = yield* DomainEvents
    const catalog = yield* Catalog
    const rows = yield* ServiceRows
    const { create, extendTo, lockedCurrentOnPlan, lockedRecord, lockUser } = rows

    /**
     * [D35]: a paid invoice extends its own service (a trial's) from its expiry, else the user's
     * current service on the plan, else starts a new active service now. Returns the service's
     * id. Run it in the payment's transaction.
     */
    const activate = (paid: { readonly serviceId: ServiceId | null; readonly userId: UserId; readonly planId: number; readonly cycleId: number }) =>
      Effect.map(activatePeriod(paid), (period) => period.serviceId)

    /** as `activate`, with the period the payment bought (a receipt's, [D96]) */
    const activatePeriod = (paid: { readonly serviceId: ServiceId | null; readonly userId: UserId; readonly planId: number; readonly cycleId: number }) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        yield* lockUser(paid.userId)
        const { cycle } = yield* Effect.orDie(catalog.anyPlanAndCycle(paid.planId, paid.cycleId))
        const extend = (from: Date) => new Date(from.getTime() + cycle.duration_days * DAY_MS)
        if (paid.serviceId !== null) {
          const own = yield* lockedRecord({ id: paid.serviceId })
          if (Option.isSome(own)) {
            // [D124]: paid in grace, the new period starts at the old expires_at
            const base = own.value.status === "grace" || own.value.expires_at.getTime() > now.getTime() ? own.value.expires_at : now
            yield* extendTo(own.value.id, extend(base), now, true)
            return { serviceId: own.value.id, from: base, to: extend(base) }
          }
        }
        const current = yield* lockedCurrentOnPlan({ userId: paid.userId, planId: paid.planId, now })
        if (Option.isSome(current)) {
          yield* extendTo(current.value.id, extend(current.value.expires_at), now, current.value.status === "grace")
          return { serviceId: current.value.id, from: current.value.expires_at, to: extend(current.value.expires_at) }
        }
        const created = yield* create({
          userId: paid.userId,
          planId: PlanId.make(paid.planId),
          cycleId: paid.cycleId,
          status: "active",
          startsAt: now,
          expiresAt: extend(now),
          autoRenew: true
        })
        return { serviceId: created, from: now, to: extend(now) }
      }).pipe(
        // [D101]: the period a payment bought, in the payment's transaction
        Effect.tap((period) =>
          domainEvents.emit({
            type: "service.activated",
            data: {
              id: period.serviceId,
              user_id: paid.userId,
              plan_id: paid.planId,
              cycle_id: paid.cycleId,
              status: "active",
              period_start: period.from.toISOString(),
              expires_at: period.to.toISOString()
            }
          })
        ),
        Effect.orDie
      )

    /**
     * [D80]: up to `limit` services past expires_at become expired; them (for their notices, [D96]).
     * `asOf`: the jobs run's one moment, so that a service whose renewal the run's dunning step did
     * not yet see as due ([D124]) is not expired by a later reading of the clock in the same run.
     */
    const expireDue = (limit: number, asOf?: Date) =>
      Effect.flatMap(asOf === undefined ? clock.now : Effect.succeed(asOf), (now) => rows.expireRows(now, limit)).pipe(
        Effect.orDie,
        // [D101]: in the jobs' batch transaction
        Effect.tap((expired) =>
          domainEvents.emitMany(
            "service.expired",
            expired.map((r) => ({
              id: r.id,
              user_id: r.user_id,
              plan_id: r.plan_id,
              cycle_id: r.cycle_id,
              status: "expired",
              expires_at: r.expires_at.toISOString()
            }))
          )
        )
      )

    /** [D124]: the services that went into grace (their ids), in the jobs' batch transaction */
    const enterGrace = (items: ReadonlyArray<{ readonly serviceId: ServiceId; readonly expiresAt: Date; readonly graceUntil: Date }>) =>
      Effect.flatMap(clock.now, (now) => rows.enterGraceRows(items, now))

    /** [D124]: after the last retry the service in grace is expired ([D101] `service.expired`); it, if it was in grace */
    const expireGrace = (id: number) =>
      Effect.flatMap(clock.now, (now) => rows.expireGraceRow(id, now)).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (r) =>
              domainEvents.emit({
                type: "service.expired",
                data: {
                  id: r.id,
                  user_id: r.user_id,
                  plan_id: r.plan_id,
                  cycle_id: r.cycle_id,
                  status: "expired",
                  expires_at: r.expires_at.toISOString()
                }
              })
          })
        )
      )

    return {
      enterGrace,
      expireGrace,
      /** the user's services, newest first */
      listOf: rows.listOf,
      /** any service by id (node and admin routes) */
      findById: rows.findById,
      /** the caller's own service; another user's is none (a 404, [D11]) */
      findOwned: rows.findOwned,
      /** [D34]: the current service */
      current: rows.current,
      /** [D108] [D111]: the reads of the service responses, each service with its schedule in the same statement */
      listScheduledOf: rows.listScheduledOf,
      findOwnedScheduled: rows.findOwnedScheduled,
      currentScheduled: rows.currentScheduled,
      /** [D34]: the current service of each user that has one, by user id, in one statement */
      currentOf: rows.currentOf,
      /** [D34], [D95]: each user's current service as a usage report needs it, by user id, in one statement */
      currentQuotasOf: rows.currentQuotasOf,
      /** issue 27, [D34]: of these users, those whose current service is active and on one of the plans, lean, by user id */
      activeOnPlansOf: rows.activeOnPlansOf,
      /** sets only the flag of the user's own service; none when it is not theirs */
      setAutoRenew: rows.setAutoRenew,
      create,
      /**
       * issue 34: the service row locked until the transaction ends, so that the changes, payments
       * and cancels of one service take turns (a plan change prices from what it then reads)
       */
      lock: (id: number) => Effect.asVoid(Effect.orDie(lockedRecord({ id }))),
      /** changes the fields given; none when the service does not exist */
      update: (id: number, changes: { readonly status: Option.Option<ServiceStatus>; readonly expiresAt: Option.Option<Date> }) =>
        sql
          .withTransaction(
            Effect.flatMap(clock.now, (now) =>
              rows.updateRecord(id, changes, now).pipe(
                // [D101]: a service an admin suspends, in the same transaction
                Effect.tap(
                  Option.match({
                    onNone: () => Effect.void,
                    onSome: (r) =>
                      r.status === "suspended" && r.previous !== "suspended"
                        ? domainEvents.emit({
                            type: "service.suspended",
                            data: {
                              id: r.id,
                              user_id: r.user_id,
                              plan_id: r.plan_id,
                              cycle_id: r.cycle_id,
                              status: r.status,
                              expires_at: r.expires_at.toISOString()
                            }
                          })
                        : Effect.void
                  })
                )
              )
            )
          )
          .pipe(
            Effect.orDie,
            Effect.tap(domainEvents.wake),
            Effect.flatMap(
              Option.match({
                onNone: () => Effect.succeed(Option.none<Subscription>()),
                onSome: (r) => rows.findById(r.id)
              })
            )
          ),
      /** [D35]: a trial's service, active at once until the trial ends; in the order's transaction */
      startTrial: (trial: { readonly userId: UserId; readonly plan: Plan; readonly cycle: Cycle }) =>
        Effect.gen(function* () {
          const now = yield* clock.now
          yield* lockUser(trial.userId)
          const expiresAt = new Date(now.getTime() + trial.plan.trial_days * DAY_MS)
          const id = yield* create({
            userId: trial.userId,
            planId: trial.plan.id,
            cycleId: trial.cycle.id,
            status: "active",
            startsAt: now,
            expiresAt,
            autoRenew: true
          })
          // [D101]: in the order's transaction
          yield* domainEvents.emit({
            type: "service.activated",
            data: {
              id,
              user_id: trial.userId,
              plan_id: trial.plan.id,
              cycle_id: trial.cycle.id,
              status: "active",
              period_start: now.toISOString(),
              expires_at: expiresAt.toISOString()
            }
          })
          return { id, expiresAt }
        }),
      /** [D92], [D95]: the users whose quota period started again on a day of `anchorDays` */
      usersAnchoredOn: rows.usersAnchoredOn,
      activate,
      activatePeriod,
      expireDue,
      expiringWithoutRenewal: rows.expiringWithoutRenewal,
      renewalCandidates: rows.renewalCandidates
    } as const
  }),
  dependencies: [Catalog.Default, ServiceRows.Default]
}) {
  /** the layer VPN access has used so far */
  static readonly Live = Services.Default

  /**
   * issue 35: the room's rules over its table in memory (`ServiceRows.Test`) and the catalogue's
   * (`Catalog.Test`, given to the test to set plans up); the clock, the events and the SQL client
   * (`SqlClientTest`: transactions of nothing) are the test's.
   */
  static readonly Test = Services.DefaultWithoutDependencies.pipe(Layer.provideMerge(ServiceRows.Test), Layer.provideMerge(Catalog.Test))
}
