import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { normalizeAmount } from "../catalog/Money.ts"
import { AppClock } from "../platform/Clock.ts"
import { currentServiceOf, type ServiceStatus, type SubscriptionRow } from "./Subscriptions.ts"

/** A service with its plan and cycle, as the services routes render it ([D34]). */
export interface ServiceRow extends SubscriptionRow {
  readonly cycle_id: number
  readonly cycle_name: string
  readonly duration_days: number
  readonly price: string
  readonly currency: string
}

/** The list shape of the spec: plan {id, name}, cycle {name, duration_days, price}. */
export const renderListItem = (r: ServiceRow) => ({
  id: r.id,
  plan: { id: r.plan_id, name: r.plan_name },
  cycle: { name: r.cycle_name, duration_days: r.duration_days, price: normalizeAmount(r.price) },
  status: r.status,
  starts_at: r.starts_at.toISOString(),
  expires_at: r.expires_at.toISOString(),
  auto_renew: r.auto_renew
})

/** Every Service field ([D34]): plan with limits, cycle with id and currency. */
export const renderDetail = (r: ServiceRow) => ({
  id: r.id,
  plan: {
    id: r.plan_id,
    name: r.plan_name,
    bandwidth_limit_gb: r.bandwidth_limit_gb,
    speed_limit_mbps: r.speed_limit_mbps
  },
  cycle: {
    id: r.cycle_id,
    name: r.cycle_name,
    duration_days: r.duration_days,
    price: normalizeAmount(r.price),
    currency: r.currency
  },
  status: r.status,
  starts_at: r.starts_at.toISOString(),
  expires_at: r.expires_at.toISOString(),
  auto_renew: r.auto_renew
})

export interface NewService {
  readonly userId: number
  readonly planId: number
  readonly cycleId: number
  readonly status: ServiceStatus
  readonly startsAt: Date
  readonly expiresAt: Date
  readonly autoRenew: boolean
}

/** The services table for the services routes (the caller's and the admin's). */
export class Services extends Context.Tag("Services")<Services, {
  /** the user's services, newest first */
  readonly listOf: (userId: number) => Effect.Effect<ReadonlyArray<ServiceRow>>
  readonly find: (serviceId: number) => Effect.Effect<Option.Option<ServiceRow>>
  /** the user's own service; another user's is none (a 404, [D11]) */
  readonly findOwned: (userId: number, serviceId: number) => Effect.Effect<Option.Option<ServiceRow>>
  /** [D34]'s current service with its detail, in one query (issue 8) */
  readonly current: (userId: number) => Effect.Effect<Option.Option<ServiceRow>>
  /** sets only the flag of the user's own service; none when it is not theirs */
  readonly setAutoRenew: (userId: number, serviceId: number, autoRenew: boolean) => Effect.Effect<Option.Option<boolean>>
  readonly userExists: (userId: number) => Effect.Effect<boolean>
  readonly create: (service: NewService) => Effect.Effect<number>
  /** changes the fields given; none when the service does not exist */
  readonly update: (
    serviceId: number,
    changes: { readonly status: Option.Option<ServiceStatus>; readonly expiresAt: Option.Option<Date> }
  ) => Effect.Effect<Option.Option<number>>
}>() {
  static readonly Live = Layer.effect(
    Services,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const select = sql`
        select s.id, s.user_id, s.status, s.starts_at, s.expires_at, s.auto_renew,
               p.id as plan_id, p.name as plan_name, p.bandwidth_limit_gb, p.speed_limit_mbps,
               c.id as cycle_id, c.name as cycle_name, c.duration_days, c.price::text as price, c.currency
        from services s
        join plans p on p.id = s.plan_id
        join billing_cycles c on c.id = s.cycle_id`
      const first = (rows: ReadonlyArray<ServiceRow>) => Option.fromNullable(rows[0])

      return {
        listOf: (userId) =>
          sql<ServiceRow>`${select} where s.user_id = ${userId} order by s.created_at desc, s.id desc`.pipe(Effect.orDie),
        find: (serviceId) => sql<ServiceRow>`${select} where s.id = ${serviceId}`.pipe(Effect.map(first), Effect.orDie),
        findOwned: (userId, serviceId) =>
          sql<ServiceRow>`${select} where s.id = ${serviceId} and s.user_id = ${userId}`.pipe(
            Effect.map(first),
            Effect.orDie
          ),
        current: (userId) =>
          Effect.flatMap(clock.now, (now) => sql<ServiceRow>`${select} where ${currentServiceOf(sql, userId, now)}`).pipe(
            Effect.map(first),
            Effect.orDie
          ),
        setAutoRenew: (userId, serviceId, autoRenew) =>
          Effect.flatMap(clock.now, (now) =>
            sql<{ auto_renew: boolean }>`
              update services set auto_renew = ${autoRenew}, updated_at = ${now}
              where id = ${serviceId} and user_id = ${userId}
              returning auto_renew`).pipe(
              Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.auto_renew)),
              Effect.orDie
            ),
        userExists: (userId) =>
          sql<{ id: number }>`select id from users where id = ${userId}`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        create: (s) =>
          Effect.flatMap(clock.now, (now) =>
            sql<{ id: number }>`
              insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at, updated_at)
              values (${s.userId}, ${s.planId}, ${s.cycleId}, ${s.status}, ${s.startsAt}, ${s.expiresAt}, ${s.autoRenew}, ${now}, ${now})
              returning id`).pipe(Effect.map((rows) => rows[0]!.id), Effect.orDie),
        update: (serviceId, changes) =>
          Effect.flatMap(clock.now, (now) => {
            const status = Option.getOrNull(changes.status)
            const expiresAt = Option.getOrNull(changes.expiresAt)
            return sql<{ id: number }>`
              update services set
                status = coalesce(${status}::text, status),
                expires_at = coalesce(${expiresAt}::timestamptz, expires_at),
                updated_at = ${now}
              where id = ${serviceId}
              returning id`
          }).pipe(Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (r) => r.id)), Effect.orDie)
      }
    })
  )
}
