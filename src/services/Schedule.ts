import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { noSchedule, type ScheduledChange, type ServiceSchedule } from "./Domain.ts"
import type { ServiceId, UserId } from "../platform/Ids.ts"

// what a service response adds lives with the contract (`Domain.ts`, issue 34)
export { noSchedule, type ScheduledChange, type ServiceSchedule } from "./Domain.ts"

/** the columns of `services` that hold its future ([D108], [D111]), read beside the service's own */
export const ScheduleColumns = {
  cancel_at: Schema.NullOr(Schema.DateFromSelf),
  scheduled_plan_id: Schema.NullOr(Schema.Int),
  scheduled_cycle_id: Schema.NullOr(Schema.Int)
} as const

const Row = Schema.Struct({ id: Schema.Int, expires_at: Schema.DateFromSelf, ...ScheduleColumns })
type ScheduleRow = Omit<typeof Row.Type, "id">

/** the catalogue's plans and cycles of a snapshot (`Catalog.rowsOf`) */
type CatalogRows = Effect.Effect.Success<ReturnType<Catalog["rowsOf"]>>

/** the plan and cycle ids a row's schedule names (to look up with the service's own) */
export const scheduledIds = (r: ScheduleRow) => ({
  planIds: r.scheduled_plan_id === null ? [] : [r.scheduled_plan_id],
  cycleIds: r.scheduled_cycle_id === null ? [] : [r.scheduled_cycle_id]
})

/** the schedule of a service's row, its plan and cycle named from a catalogue snapshot holding them */
export const scheduleOf = (r: ScheduleRow, c: CatalogRows): ServiceSchedule => {
  if (r.cancel_at === null && (r.scheduled_plan_id === null || r.scheduled_cycle_id === null)) return noSchedule
  const scheduled: ScheduledChange | null =
    r.scheduled_plan_id === null || r.scheduled_cycle_id === null
      ? null
      : (() => {
          const cycle = c.cycle(r.scheduled_cycle_id)
          return {
            plan: { id: r.scheduled_plan_id, name: c.plan(r.scheduled_plan_id).name },
            cycle: { id: cycle.id, name: cycle.name, duration_days: cycle.duration_days, price: cycle.price },
            effective_at: r.expires_at.toISOString()
          }
        })()
  return { cancel_at: r.cancel_at === null ? null : r.cancel_at.toISOString(), scheduled_change: scheduled }
}

const DAY_MS = 86_400_000

/**
 * The future of a service ([D111] cancel at period end, [D108] a scheduled downgrade): read for
 * the service responses, and the plan switches of a change (an upgrade paid, a downgrade's renewal
 * paid), which emit `service.changed` ([D101]) in the payment's transaction.
 */
export class Schedules extends Effect.Service<Schedules>()("services/Schedules", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const domainEvents = yield* DomainEvents

    // issue 27: statements built once, not per call
    const rowsOfIds = SqlSchema.findAll({
      Request: Schema.Array(Schema.Int),
      Result: Row,
      execute: (ids) => sql`select id, expires_at, cancel_at, scheduled_plan_id, scheduled_cycle_id from services where id in ${sql.in([...ids])}`
    })
    const rowsOf = (ids: ReadonlyArray<number>) => (ids.length === 0 ? Effect.succeed([]) : Effect.orDie(rowsOfIds(ids)))
    const unscheduleRow = SqlSchema.findOne({
      Request: Schema.Struct({ serviceId: Schema.Int, now: Schema.DateFromSelf }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: ({ now, serviceId }) => sql`update services set scheduled_plan_id = null, scheduled_cycle_id = null, updated_at = ${now}
        where id = ${serviceId} and scheduled_plan_id is not null returning id`
    })

    /** the schedule of each service, by id */
    const ofMany = (ids: ReadonlyArray<number>) =>
      Effect.flatMap(rowsOf(ids), (rows) =>
        Effect.map(
          catalog.rowsOf(
            rows.flatMap((r) => scheduledIds(r).planIds),
            rows.flatMap((r) => scheduledIds(r).cycleIds)
          ),
          (c) => new Map(rows.map((r): [number, ServiceSchedule] => [r.id, scheduleOf(r, c)])) as ReadonlyMap<number, ServiceSchedule>
        )
      )

    const of = (id: number) => Effect.map(ofMany([id]), (m) => m.get(id) ?? noSchedule)

    /** [D108]: a downgrade for the period's end (replacing one scheduled before) */
    const schedule = (serviceId: ServiceId, planId: number, cycleId: number) =>
      Effect.flatMap(
        clock.now,
        (now) => sql`update services set scheduled_plan_id = ${planId}, scheduled_cycle_id = ${cycleId}, updated_at = ${now} where id = ${serviceId}`
      ).pipe(Effect.asVoid, Effect.orDie)

    /** [D108]: removes a scheduled downgrade; whether there was one */
    const unschedule = (serviceId: ServiceId) =>
      Effect.flatMap(clock.now, (now) => unscheduleRow({ serviceId, now })).pipe(Effect.map(Option.isSome), Effect.orDie)

    const switchPlanRow = SqlSchema.single({
      Request: Schema.Struct({
        serviceId: Schema.Number,
        planId: Schema.Number,
        cycleId: Schema.Number,
        startNow: Schema.Boolean,
        durationDays: Schema.Number,
        now: Schema.DateFromSelf
      }),
      Result: Schema.Struct({ starts_at: Schema.DateFromSelf, expires_at: Schema.DateFromSelf }),
      execute: (change) =>
        change.startNow
          ? sql`update services set plan_id = ${change.planId}, cycle_id = ${change.cycleId}, starts_at = ${change.now},
                expires_at = ${new Date(change.now.getTime() + change.durationDays * DAY_MS)}, status = 'active',
                -- [D111]: a service cancelling at its period's end still ends at it: the new one
                cancel_at = case when cancel_at is null then null else ${new Date(change.now.getTime() + change.durationDays * DAY_MS)}::timestamptz end,
                scheduled_plan_id = null, scheduled_cycle_id = null, updated_at = ${change.now}
              where id = ${change.serviceId} returning starts_at, expires_at`
          : sql`update services set plan_id = ${change.planId}, cycle_id = ${change.cycleId},
                expires_at = (case when expires_at > ${change.now} then expires_at else ${change.now} end) + make_interval(days => ${change.durationDays}),
                status = 'active', scheduled_plan_id = null, scheduled_cycle_id = null, updated_at = ${change.now}
              where id = ${change.serviceId} returning starts_at, expires_at`
    })
    /**
     * [D108]: the service moves to another plan and cycle. `startNow`: an upgrade paid, its new
     * period starting now for the new cycle; else (a downgrade's renewal paid) the period follows
     * on from `expires_at`. Emits `service.changed`. Run it in the payment's transaction.
     */
    const switchPlan = (change: {
      readonly serviceId: ServiceId
      readonly userId: UserId
      readonly planId: number
      readonly cycleId: number
      readonly kind: "upgrade" | "downgrade"
      readonly startNow: boolean
    }) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const { cycle } = yield* Effect.orDie(catalog.anyPlanAndCycle(change.planId, change.cycleId))
        const row = yield* switchPlanRow({
          serviceId: change.serviceId,
          planId: change.planId,
          cycleId: change.cycleId,
          startNow: change.startNow,
          durationDays: cycle.duration_days,
          now
        }).pipe(Effect.orDie)
        yield* domainEvents.emit({
          type: "service.changed",
          data: {
            id: change.serviceId,
            user_id: change.userId,
            plan_id: change.planId,
            cycle_id: change.cycleId,
            kind: change.kind,
            starts_at: row.starts_at.toISOString(),
            expires_at: row.expires_at.toISOString()
          }
        })
        return { from: row.starts_at, to: row.expires_at }
      })

    return { of, ofMany, schedule, unschedule, switchPlan } as const
  }),
  dependencies: [Catalog.Default]
}) {}
