import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"

export type ServiceStatus = "pending" | "active" | "suspended" | "expired" | "cancelled"

/** A service (subscription) with what access and usage need of its plan. */
export interface Subscription {
  readonly id: number
  readonly userId: number
  readonly status: ServiceStatus
  readonly startsAt: Date
  readonly expiresAt: Date
  readonly autoRenew: boolean
  readonly plan: {
    readonly id: number
    readonly name: string
    readonly bandwidthLimitGb: number
    readonly speedLimitMbps: number | null
  }
}

/** A service row with its plan's columns (Services adds the cycle's). */
export interface SubscriptionRow {
  readonly id: number
  readonly user_id: number
  readonly status: ServiceStatus
  readonly starts_at: Date
  readonly expires_at: Date
  readonly auto_renew: boolean
  readonly plan_id: number
  readonly plan_name: string
  readonly bandwidth_limit_gb: number
  readonly speed_limit_mbps: number | null
}

const toSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id,
  userId: r.user_id,
  status: r.status,
  startsAt: r.starts_at,
  expiresAt: r.expires_at,
  autoRenew: r.auto_renew,
  plan: { id: r.plan_id, name: r.plan_name, bandwidthLimitGb: r.bandwidth_limit_gb, speedLimitMbps: r.speed_limit_mbps }
})

/**
 * [D34]: the user's current service is the newest one that is active or suspended and not past
 * `expires_at`. The one place this rule is written: the detail route and VPN access both use it.
 */
export const currentServiceOf = (sql: SqlClient.SqlClient, userId: number, now: Date) =>
  sql`s.user_id = ${userId} and s.status in ('active', 'suspended') and s.expires_at > ${now}
      order by s.created_at desc, s.id desc limit 1`

/**
 * Read access to services for the other rooms (VPN access, bandwidth). Billing owns the
 * table; others ask here.
 */
export class Subscriptions extends Context.Tag("Subscriptions")<Subscriptions, {
  /** [D34]: the newest service that is active or suspended and not past expires_at */
  readonly current: (userId: number) => Effect.Effect<Option.Option<Subscription>>
  /** the caller's own service by id (another user's is none: a 404) */
  readonly findOwned: (userId: number, serviceId: number) => Effect.Effect<Option.Option<Subscription>>
  /** any service by id (node and admin routes) */
  readonly findById: (serviceId: number) => Effect.Effect<Option.Option<Subscription>>
}>() {
  static readonly Live = Layer.effect(
    Subscriptions,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const select = sql`
        select s.id, s.user_id, s.status, s.starts_at, s.expires_at, s.auto_renew,
               p.id as plan_id, p.name as plan_name, p.bandwidth_limit_gb, p.speed_limit_mbps
        from services s join plans p on p.id = s.plan_id`
      const one = (rows: ReadonlyArray<SubscriptionRow>) => Option.map(Option.fromNullable(rows[0]), toSubscription)
      return {
        current: (userId) =>
          Effect.flatMap(clock.now, (now) =>
            sql<SubscriptionRow>`${select} where ${currentServiceOf(sql, userId, now)}`).pipe(Effect.map(one), Effect.orDie),
        findOwned: (userId, serviceId) =>
          sql<SubscriptionRow>`${select} where s.id = ${serviceId} and s.user_id = ${userId}`.pipe(Effect.map(one), Effect.orDie),
        findById: (serviceId) => sql<SubscriptionRow>`${select} where s.id = ${serviceId}`.pipe(Effect.map(one), Effect.orDie)
      }
    })
  )
}
