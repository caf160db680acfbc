import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Catalog } from "../catalog/Catalog.ts"
import type { AppClock } from "../platform/Clock.ts"
import { type ActiveService, planOf, type ServiceQuota, type ServiceRecord, subscription, type Subscription } from "./Domain.ts"
import { noSchedule } from "./Schedule.ts"
import type { ServiceRows } from "./ServiceRows.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

type Rows = Parameters<(typeof ServiceRows)["make"]>[0]

/**
 * `ServiceRows.Test` (issue 35): the `services` table in memory, read with the plans and cycles
 * of the catalogue given (a `Catalog.Test` in the unit tier), with the SQL's rules: a service is
 * the user's current one while active or suspended and not past `expires_at`, newest first.
 * Schedules ([D108], [D111]) are another service's columns: none here. Locks lock nothing (one
 * fiber at a time touches memory).
 */
export const memoryServiceRows = (clock: AppClock["Type"], catalog: Catalog): Rows => {
  const rows = new Map<number, ServiceRecord>()
  let nextId = 1

  const newestFirst = (list: Iterable<ServiceRecord>) => [...list].sort((a, b) => b.id - a.id)
  const ofUser = (userId: UserId) => newestFirst([...rows.values()].filter((r) => r.user_id === userId))
  // [D34], [D124]: a service in grace is current past its expiry, until the dunning ends it
  const isCurrent = (r: ServiceRecord, now: Date) =>
    r.status === "grace" || ((r.status === "active" || r.status === "suspended") && r.expires_at.getTime() > now.getTime())
  const currentRecord = (userId: UserId, now: Date) => Option.fromNullable(ofUser(userId).find((r) => isCurrent(r, now)))

  const withCatalog = (list: ReadonlyArray<ServiceRecord>) =>
    Effect.map(
      catalog.rowsOf(
        list.map((r) => r.plan_id),
        list.map((r) => r.cycle_id)
      ),
      (c) => list.map((r) => subscription(r, c.plan(r.plan_id), c.cycle(r.cycle_id)))
    )
  const one = (found: Option.Option<ServiceRecord>) =>
    Option.match(found, {
      onNone: () => Effect.succeed(Option.none<Subscription>()),
      onSome: (r) => Effect.map(withCatalog([r]), (list) => Option.some(list[0]!))
    })
  const scheduled = (found: Option.Option<ServiceRecord>) =>
    Effect.map(
      one(found),
      Option.map((service) => ({ service, schedule: noSchedule }))
    )
  const owned = (userId: UserId, id: number) => Option.filter(Option.fromNullable(rows.get(id)), (r) => r.user_id === userId)
  const leanByUser = (list: ReadonlyArray<ServiceRecord>) =>
    Effect.map(
      catalog.rowsOf(
        list.map((r) => r.plan_id),
        []
      ),
      (c) =>
        new Map(
          list.map(
            (r) => [r.user_id, { id: r.id, userId: r.user_id, startsAt: r.starts_at, plan: planOf(c.plan(r.plan_id)), grace: r.status === "grace" }] as const
          )
        )
    )
  const currentOfAll = (userIds: ReadonlyArray<number>, now: Date) =>
    [...new Set(userIds)].flatMap((userId) => Option.toArray(currentRecord(UserId.make(userId), now)))
  const candidates = (keep: (r: ServiceRecord) => boolean, afterId: number, limit: number) =>
    [...rows.values()]
      .filter((r) => keep(r) && r.id > afterId)
      .sort((a, b) => a.id - b.id)
      .slice(0, limit)
      .map((r) => ({ id: r.id, user_id: r.user_id, plan_id: r.plan_id, cycle_id: r.cycle_id, expires_at: r.expires_at }))

  return {
    // [D124]: the active auto-renewing services past their expiry go into grace until `graceUntil`
    enterGraceRows: (items, now) =>
      Effect.sync(() =>
        items.flatMap((i) => {
          const r = rows.get(i.serviceId)
          if (r === undefined || r.status !== "active" || !r.auto_renew || r.expires_at.getTime() !== i.expiresAt.getTime()) return []
          rows.set(r.id, { ...r, status: "grace", grace_until: i.graceUntil })
          void now
          return [r.id]
        })
      ),
    expireGraceRow: (id) =>
      Effect.sync(() => {
        const r = rows.get(id)
        if (r === undefined || r.status !== "grace") return Option.none()
        rows.set(id, { ...r, status: "expired", grace_until: null })
        return Option.some({ id: r.id, user_id: r.user_id, plan_id: r.plan_id, cycle_id: r.cycle_id, expires_at: r.expires_at })
      }),
    listOf: (userId) => withCatalog(ofUser(userId)),
    findById: (id) => one(Option.fromNullable(rows.get(id))),
    findOwned: (userId, id) => one(owned(userId, id)),
    current: (userId) => Effect.flatMap(clock.now, (now) => one(currentRecord(userId, now))),
    listScheduledOf: (userId) => Effect.map(withCatalog(ofUser(userId)), (list) => list.map((service) => ({ service, schedule: noSchedule }))),
    findOwnedScheduled: (userId, id) => scheduled(owned(userId, id)),
    currentScheduled: (userId) => Effect.flatMap(clock.now, (now) => scheduled(currentRecord(userId, now))),
    currentOf: (userIds) =>
      Effect.flatMap(clock.now, (now) =>
        Effect.map(withCatalog(currentOfAll(userIds, now)), (list) => new Map(list.map((s) => [s.userId, s])) as ReadonlyMap<number, Subscription>)
      ),
    currentQuotasOf: (userIds) =>
      Effect.flatMap(clock.now, (now) => Effect.map(leanByUser(currentOfAll(userIds, now)), (found) => found as ReadonlyMap<number, ServiceQuota>)),
    activeOnPlansOf: (userIds, planIds) =>
      Effect.flatMap(clock.now, (now) =>
        Effect.map(
          leanByUser(currentOfAll(userIds, now).filter((r) => (r.status === "active" || r.status === "grace") && planIds.includes(r.plan_id))),
          (found) => found as ReadonlyMap<number, ActiveService>
        )
      ),
    setAutoRenew: (userId, id, autoRenew) =>
      Effect.sync(() =>
        Option.map(owned(userId, id), (r) => {
          rows.set(r.id, { ...r, auto_renew: autoRenew })
          return autoRenew
        })
      ),
    create: (service) =>
      Effect.sync(() => {
        const id = ServiceId.make(nextId++)
        rows.set(id, {
          id,
          user_id: service.userId,
          plan_id: service.planId,
          cycle_id: service.cycleId,
          status: service.status,
          starts_at: service.startsAt,
          expires_at: service.expiresAt,
          auto_renew: service.autoRenew,
          grace_until: null
        })
        return id
      }),
    usersAnchoredOn: (anchorDays) =>
      Effect.gen(function* () {
        const planIds = yield* catalog.planIdsResetting("billing_day")
        const now = yield* clock.now
        return [
          ...new Set(
            [...rows.values()].filter((r) => planIds.includes(r.plan_id) && isCurrent(r, now) && anchorDays.has(r.starts_at.getUTCDate())).map((r) => r.user_id)
          )
        ]
      }),
    expiringWithoutRenewal: ({ afterId, from, limit, to }) =>
      Effect.sync(() => candidates((r) => r.status === "active" && !r.auto_renew && r.expires_at > from && r.expires_at <= to, afterId, limit)),
    renewalCandidates: ({ afterId, horizon, limit }) =>
      Effect.map(clock.now, (now) => candidates((r) => r.status === "active" && r.auto_renew && r.expires_at > now && r.expires_at <= horizon, afterId, limit)),
    lockUser: () => Effect.void,
    extendTo: (id, expiresAt, _now, reactivate) =>
      Effect.sync(() => {
        const r = rows.get(id)
        if (r === undefined) return
        rows.set(id, { ...r, expires_at: expiresAt, status: reactivate && r.status !== "suspended" ? "active" : r.status })
      }),
    lockedRecord: ({ id }) => Effect.sync(() => Option.fromNullable(rows.get(id))),
    lockedCurrentOnPlan: ({ now, planId, userId }) =>
      Effect.sync(() => Option.fromNullable(ofUser(UserId.make(userId)).find((r) => r.plan_id === planId && isCurrent(r, now)))),
    expireRows: (now, limit) =>
      Effect.sync(() => {
        const due = [...rows.values()]
          .filter((r) => (r.status === "active" || r.status === "suspended") && r.expires_at.getTime() <= now.getTime())
          .sort((a, b) => a.expires_at.getTime() - b.expires_at.getTime())
          .slice(0, limit)
        for (const r of due) rows.set(r.id, { ...r, status: "expired" })
        return due.map((r) => ({ id: r.id, user_id: r.user_id, plan_id: r.plan_id, cycle_id: r.cycle_id, expires_at: r.expires_at }))
      }),
    updateRecord: (id, changes) =>
      Effect.sync(() =>
        Option.map(Option.fromNullable(rows.get(id)), (r) => {
          const updated: ServiceRecord = {
            ...r,
            status: Option.getOrElse(changes.status, () => r.status),
            expires_at: Option.getOrElse(changes.expiresAt, () => r.expires_at)
          }
          rows.set(id, updated)
          return { ...updated, previous: r.status }
        })
      )
  }
}
