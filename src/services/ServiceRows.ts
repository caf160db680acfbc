import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import {
  type ActiveService,
  ActiveOnPlan,
  NewService,
  planOf,
  RenewalCandidate,
  type ServiceQuota,
  ServiceQuotaRecord,
  ServiceRecord,
  ServiceStatus,
  subscription,
  type Subscription
} from "./Domain.ts"
import { makeGraceRows } from "./GraceRows.ts"
import { memoryServiceRows } from "./ServiceRowsMemory.ts"
import { ScheduleColumns, scheduledIds, scheduleOf, type ServiceSchedule } from "./Schedule.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

/** the key space of this room's advisory locks (one lock per user) */
const USER_LOCK_SPACE = 4_080_002

const UserIdRequest = Schema.Struct({ userId: Schema.Int })
const UserAt = Schema.Struct({ userId: Schema.Int, now: Schema.DateFromSelf })
const Id = Schema.Struct({ id: Schema.Int })
/** a service's id as a statement returns it */
const ServiceIdRow = Schema.Struct({ id: ServiceId })
/** a PostgreSQL `int[]` literal of these numbers */
const intArray = (ids: Iterable<number>) => `{${[...ids].join(",")}}`

/** a service's row with its future ([D108], [D111]): what the service responses show, in one read */
const ScheduledRecord = Schema.Struct({ ...ServiceRecord.fields, ...ScheduleColumns })
type ScheduledRecord = typeof ScheduledRecord.Type

/** a service with its schedule, as the service responses show it */
export interface ScheduledService {
  readonly service: Subscription
  readonly schedule: ServiceSchedule
}

/**
 * The `services` table, the table this room owns, read with the plan and cycle of the catalogue's
 * in-memory snapshot (one round trip a read). Statements run in the caller's transaction when
 * there is one (orders and payments start and extend services in theirs). The rules are `Services.ts`.
 */
export class ServiceRows extends Effect.Service<ServiceRows>()("services/ServiceRows", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog

    const columns = sql`id, user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, grace_until`

    const withCatalog = (rows: ReadonlyArray<ServiceRecord>) =>
      Effect.map(
        catalog.rowsOf(
          rows.map((r) => r.plan_id),
          rows.map((r) => r.cycle_id)
        ),
        (c) => rows.map((r) => subscription(r, c.plan(r.plan_id), c.cycle(r.cycle_id)))
      )
    const oneWithCatalog = (row: Option.Option<ServiceRecord>) =>
      Option.match(row, {
        onNone: () => Effect.succeed(Option.none<Subscription>()),
        onSome: (r) => Effect.map(withCatalog([r]), (list) => Option.some(list[0]!))
      })

    /** issue 27: the service and its schedule from one row, the names from one catalogue snapshot */
    const withSchedules = (rows: ReadonlyArray<ScheduledRecord>) =>
      Effect.map(
        catalog.rowsOf(
          rows.flatMap((r) => [r.plan_id, ...scheduledIds(r).planIds]),
          rows.flatMap((r) => [r.cycle_id, ...scheduledIds(r).cycleIds])
        ),
        (c) => rows.map((r): ScheduledService => ({ service: subscription(r, c.plan(r.plan_id), c.cycle(r.cycle_id)), schedule: scheduleOf(r, c) }))
      )
    const oneWithSchedule = (row: Option.Option<ScheduledRecord>) =>
      Option.isNone(row) ? Effect.succeed(Option.none<ScheduledService>()) : Effect.map(withSchedules([row.value]), (list) => Option.some(list[0]!))
    const scheduledColumns = sql`${columns}, cancel_at, scheduled_plan_id, scheduled_cycle_id`
    /**
     * [D34]: a service that can be the user's current one at `now` (the newest such is); [D124]:
     * a service in grace is, past its expiry, until the dunning ends it (the status alone says so)
     */
    const currentAt = (now: Date) => sql`(status = 'grace' or (status in ('active', 'suspended') and expires_at > ${now}))`
    const newestFirst = sql`order by created_at desc, id desc`
    /** one user's services read as `Result` through `cols`: all of them, one they own, the current one */
    const userReads = <A, I>(cols: typeof columns, Result: Schema.Schema<A, I>) => ({
      list: SqlSchema.findAll({
        Request: UserIdRequest,
        Result,
        execute: ({ userId }) => sql`select ${cols} from services where user_id = ${userId} ${newestFirst}`
      }),
      owned: SqlSchema.findOne({
        Request: Schema.Struct({ userId: Schema.Int, id: Schema.Int }),
        Result,
        execute: ({ id, userId }) => sql`select ${cols} from services where id = ${id} and user_id = ${userId}`
      }),
      /** [D34]: the newest service that is active or suspended and not past expires_at */
      current: SqlSchema.findOne({
        Request: UserAt,
        Result,
        execute: ({ now, userId }) => sql`select ${cols} from services where user_id = ${userId} and ${currentAt(now)} ${newestFirst} limit 1`
      })
    })
    const plain = userReads(columns, ServiceRecord)
    /** issue 27: the same reads with the schedule ([D108], [D111]) in the same row */
    const scheduled = userReads(scheduledColumns, ScheduledRecord)
    const byId = SqlSchema.findOne({
      Request: Id,
      Result: ServiceRecord,
      execute: ({ id }) => sql`select ${columns} from services where id = ${id}`
    })
    /** [D34] for many users at once: each user's newest active or suspended service not past expires_at */
    const currentRecords = SqlSchema.findAll({
      Request: Schema.Struct({ userIds: Schema.Array(Schema.Int), now: Schema.DateFromSelf }),
      Result: ServiceRecord,
      // the query of `current` once per id, as a lateral lookup: one probe of services_user_current each (migration 47: an index-only one)
      // (a join or `= any(...)` over thousands of ids is planned as a scan of the table)
      execute: ({ now, userIds }) => sql`
        select s.* from unnest(${`{${userIds.join(",")}}`}::int[]) as ids (id)
        cross join lateral (
          select ${columns} from services
          where user_id = ids.id and ${currentAt(now)} ${newestFirst} limit 1
        ) s`
    })
    /** `currentRecords` with only what a usage report needs (issue 27: a report names thousands of users) */
    const currentQuotaRecords = SqlSchema.findAll({
      Request: Schema.Struct({ userIds: Schema.Array(Schema.Int), now: Schema.DateFromSelf }),
      Result: ServiceQuotaRecord,
      execute: ({ now, userIds }) => sql`
        select s.* from unnest(${`{${userIds.join(",")}}`}::int[]) as ids (id)
        cross join lateral (
          select id, user_id, plan_id, starts_at from services
          where user_id = ids.id and ${currentAt(now)} ${newestFirst} limit 1
        ) s`
    })
    /**
     * issue 27: `currentRecords`, then only the current services that are active and on one of
     * `planIds`, lean (what a node's list needs of them: no cycle, no expiry, no renewal flag)
     */
    const activeOnPlansRecords = SqlSchema.findAll({
      // the ids as PostgreSQL array literals (`{1,2}`, made of numbers): thousands of them a call
      Request: Schema.Struct({ userIds: Schema.String, planIds: Schema.String, now: Schema.DateFromSelf }),
      Result: ActiveOnPlan,
      execute: ({ now, planIds, userIds }) => sql`
        select s.id, s.user_id, s.plan_id, s.starts_at, s.status from unnest(${userIds}::int[]) as ids (id)
        cross join lateral (
          select id, user_id, plan_id, status, starts_at from services
          where user_id = ids.id and ${currentAt(now)} ${newestFirst} limit 1
        ) s
        where s.status in ('active', 'grace') and s.plan_id = any(${planIds}::int[])`
    })
    const insert = SqlSchema.single({
      Request: Schema.Struct({ service: NewService, now: Schema.DateFromSelf }),
      Result: ServiceIdRow,
      execute: ({ now, service: s }) => {
        return sql`
          insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at, updated_at)
          values (${s.userId}, ${s.planId}, ${s.cycleId}, ${s.status}, ${s.startsAt}, ${s.expiresAt}, ${s.autoRenew}, ${now}, ${now})
          returning id`
      }
    })
    const create = (service: NewService) =>
      Effect.flatMap(clock.now, (now) => insert({ service, now })).pipe(
        Effect.map((r) => r.id),
        Effect.orDie
      )

    const find = (id: number) => Effect.flatMap(Effect.orDie(byId({ id })), oneWithCatalog)

    /** the user's payments and trials take turns: two at once cannot both start a service */
    const lockUser = (userId: UserId) => sql`select pg_advisory_xact_lock(${USER_LOCK_SPACE}, ${userId})`.pipe(Effect.asVoid, Effect.orDie)

    // [D124]: a service in grace is active again with the payment, its grace over
    const extendTo = (id: number, expiresAt: Date, now: Date, reactivate: boolean) =>
      (reactivate
        ? sql`update services set expires_at = ${expiresAt},
            status = case when status = 'suspended' then status else 'active' end, grace_until = null,
            updated_at = ${now} where id = ${id}`
        : sql`update services set expires_at = ${expiresAt}, updated_at = ${now} where id = ${id}`
      ).pipe(Effect.asVoid)

    const lockedRecord = SqlSchema.findOne({
      Request: Id,
      Result: ServiceRecord,
      execute: ({ id }) => sql`select ${columns} from services where id = ${id} for update`
    })
    const lockedCurrentOnPlan = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Int, planId: Schema.Int, now: Schema.DateFromSelf }),
      Result: ServiceRecord,
      execute: ({ now, planId, userId }) => sql`
        select ${columns} from services
        where user_id = ${userId} and plan_id = ${planId} and ${currentAt(now)}
        ${newestFirst} limit 1 for update`
    })

    /** [D80]: up to `limit` services past expires_at become expired; them */
    const expireRowsStatement = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, limit: Schema.Number }),
      Result: RenewalCandidate,
      execute: ({ limit, now }) => sql`
          update services set status = 'expired', updated_at = ${now}
          where id in (select id from services where status in ('active', 'suspended') and expires_at <= ${now}
                       order by expires_at limit ${limit} for update skip locked)
          returning id, user_id, plan_id, cycle_id, expires_at`
    })
    const expireRows = (now: Date, limit: number) => expireRowsStatement({ now, limit })

    /** changes the fields given, with the status before; none when the service does not exist */
    const updateRecordStatement = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.Number,
        status: Schema.NullOr(Schema.String),
        expiresAt: Schema.NullOr(Schema.DateFromSelf),
        now: Schema.DateFromSelf
      }),
      Result: Schema.Struct({ ...ServiceRecord.fields, previous: ServiceStatus }),
      execute: ({ expiresAt, id, now, status }) => sql`
          with prev as (select id, status from services where id = ${id} for update)
          update services set
            status = coalesce(${status}::text, services.status),
            expires_at = coalesce(${expiresAt}::timestamptz, expires_at),
            -- [D124]: an admin's status ends a grace
            grace_until = case when coalesce(${status}::text, services.status) = 'grace' then grace_until end,
            updated_at = ${now}
          from prev where services.id = prev.id
          returning services.id, user_id, plan_id, cycle_id, services.status, starts_at, expires_at, auto_renew, grace_until,
            prev.status as previous`
    })
    const updateRecord = (id: number, changes: { readonly status: Option.Option<ServiceStatus>; readonly expiresAt: Option.Option<Date> }, now: Date) =>
      updateRecordStatement({ id, status: Option.getOrNull(changes.status), expiresAt: Option.getOrNull(changes.expiresAt), now })

    /**
     * [D96]: active services without auto-renew expiring after `from` and by `to`, by id after
     * `afterId` (the expiry notices; auto-renewing ones get a renewal invoice instead)
     */
    const expiringWithoutRenewalStatement = SqlSchema.findAll({
      Request: Schema.Struct({ from: Schema.DateFromSelf, to: Schema.DateFromSelf, afterId: Schema.Number, limit: Schema.Number }),
      Result: RenewalCandidate,
      execute: (options) => sql`
          select id, user_id, plan_id, cycle_id, expires_at from services
          where status = 'active' and not auto_renew and expires_at > ${options.from} and expires_at <= ${options.to}
            and id > ${options.afterId}
          order by id limit ${options.limit}`
    })
    const expiringWithoutRenewal = (options: { readonly from: Date; readonly to: Date; readonly afterId: number; readonly limit: number }) =>
      expiringWithoutRenewalStatement(options).pipe(Effect.orDie)

    const renewalCandidatesStatement = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, horizon: Schema.DateFromSelf, afterId: Schema.Number, limit: Schema.Number }),
      Result: RenewalCandidate,
      execute: (options) => sql`
            select id, user_id, plan_id, cycle_id, expires_at from services
            where status = 'active' and auto_renew and expires_at > ${options.now} and expires_at <= ${options.horizon}
              and id > ${options.afterId}
            order by id limit ${options.limit}`
    })
    /** [D80]: auto-renewing active services expiring before `horizon`, by id after `afterId` */
    const renewalCandidates = (options: { readonly horizon: Date; readonly afterId: number; readonly limit: number }) =>
      Effect.flatMap(clock.now, (now) => renewalCandidatesStatement({ ...options, now })).pipe(Effect.orDie)

    /**
     * issue 27: lean current services (the node list's and the usage reports' reads), by user id,
     * each with its plan from the catalogue snapshot, one plan object per plan
     */
    const leanByUser = (
      rows: ReadonlyArray<{ readonly id: number; readonly user_id: number; readonly plan_id: number; readonly starts_at: Date; readonly status?: string }>
    ) =>
      Effect.map(catalog.rowsOf(new Set(rows.map((r) => r.plan_id)), []), (c) => {
        const plans = new Map<number, Subscription["plan"]>()
        const found = new Map<number, ActiveService>()
        for (const r of rows) {
          let plan = plans.get(r.plan_id)
          if (plan === undefined) plans.set(r.plan_id, (plan = planOf(c.plan(r.plan_id))))
          found.set(r.user_id, { id: ServiceId.make(r.id), userId: UserId.make(r.user_id), startsAt: r.starts_at, plan, grace: r.status === "grace" })
        }
        return found as ReadonlyMap<number, ActiveService>
      })

    const { enterGraceRows, expireGraceRow } = makeGraceRows(sql)

    const setAutoRenewStatement = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Number, id: Schema.Number, autoRenew: Schema.Boolean, now: Schema.DateFromSelf }),
      Result: ServiceRecord.pick("auto_renew"),
      execute: ({ autoRenew, id, now, userId }) => sql`update services set auto_renew = ${autoRenew}, updated_at = ${now},
              cancel_at = case when ${autoRenew}::boolean then null else cancel_at end
              where id = ${id} and user_id = ${userId} returning auto_renew`
    })
    const anchoredUsers = SqlSchema.findAll({
      Request: Schema.Struct({ planIds: Schema.Array(Schema.Number), anchorDays: Schema.Array(Schema.Number), now: Schema.DateFromSelf }),
      Result: Schema.Struct({ user_id: UserId }),
      execute: ({ anchorDays, now, planIds }) => sql`
              select distinct user_id from services
              where plan_id in ${sql.in(planIds)} and ${currentAt(now)}
                and extract(day from starts_at at time zone 'UTC')::int in ${sql.in(anchorDays)}`
    })

    return {
      enterGraceRows,
      expireGraceRow,
      /** the user's services, newest first */
      listOf: (userId: UserId) => Effect.flatMap(Effect.orDie(plain.list({ userId })), withCatalog),
      /** any service by id (node and admin routes) */
      findById: find,
      /** the caller's own service; another user's is none (a 404, [D11]) */
      findOwned: (userId: UserId, id: number) => Effect.flatMap(Effect.orDie(plain.owned({ userId, id })), oneWithCatalog),
      /** [D34]: the current service */
      current: (userId: UserId) => Effect.flatMap(clock.now, (now) => Effect.flatMap(Effect.orDie(plain.current({ userId, now })), oneWithCatalog)),
      /** the user's services with their schedules, newest first (one round trip) */
      listScheduledOf: (userId: UserId) => Effect.flatMap(Effect.orDie(scheduled.list({ userId })), withSchedules),
      /** the caller's own service with its schedule; another user's is none (one round trip) */
      findOwnedScheduled: (userId: UserId, id: number) => Effect.flatMap(Effect.orDie(scheduled.owned({ userId, id })), oneWithSchedule),
      /** [D34]: the current service with its schedule (one round trip) */
      currentScheduled: (userId: UserId) =>
        Effect.flatMap(clock.now, (now) => Effect.flatMap(Effect.orDie(scheduled.current({ userId, now })), oneWithSchedule)),
      /** [D34]: the current service of each user that has one, by user id, in one statement */
      currentOf: (userIds: ReadonlyArray<number>) =>
        userIds.length === 0
          ? Effect.succeed(new Map<number, Subscription>() as ReadonlyMap<number, Subscription>)
          : Effect.flatMap(clock.now, (now) => Effect.orDie(currentRecords({ userIds: [...new Set(userIds)], now }))).pipe(
              Effect.flatMap(withCatalog),
              Effect.map((list) => new Map(list.map((s) => [s.userId, s])) as ReadonlyMap<number, Subscription>)
            ),
      /**
       * [D34], [D95]: each user's current service as a usage report needs it (its period's anchor
       * and its plan's quota), by user id, in one statement
       */
      currentQuotasOf: (userIds: ReadonlyArray<number>): Effect.Effect<ReadonlyMap<number, ServiceQuota>> =>
        userIds.length === 0
          ? Effect.succeed(new Map<number, ServiceQuota>())
          : Effect.flatMap(clock.now, (now) => Effect.orDie(currentQuotaRecords({ userIds: [...new Set(userIds)], now }))).pipe(Effect.flatMap(leanByUser)),
      /**
       * issue 27, [D34]: of these users, those whose current service is active and on one of
       * `planIds`: that service, lean (id, user, start, plan), by user id, in one statement
       */
      activeOnPlansOf: (userIds: ReadonlyArray<number>, planIds: ReadonlyArray<number>) =>
        userIds.length === 0 || planIds.length === 0
          ? Effect.succeed(new Map<number, ActiveService>() as ReadonlyMap<number, ActiveService>)
          : Effect.flatMap(clock.now, (now) =>
              Effect.orDie(activeOnPlansRecords({ userIds: intArray(new Set(userIds)), planIds: intArray(planIds), now }))
            ).pipe(Effect.flatMap(leanByUser)),
      /** sets only the flag of the user's own service; none when it is not theirs */
      setAutoRenew: (userId: UserId, id: number, autoRenew: boolean) =>
        Effect.flatMap(clock.now, (now) => setAutoRenewStatement({ userId, id, autoRenew, now })).pipe(
          Effect.map(Option.map((r) => r.auto_renew)),
          Effect.orDie
        ),
      create,
      /**
       * [D92], [D95]: the users whose current service is on a `billing_day` plan and started on
       * one of the days of the month `anchorDays` (UTC): those whose quota period started again
       * on a day whose anchors these are.
       */
      usersAnchoredOn: (anchorDays: ReadonlySet<number>) =>
        Effect.gen(function* () {
          const planIds = yield* catalog.planIdsResetting("billing_day")
          if (planIds.length === 0 || anchorDays.size === 0) return [] as ReadonlyArray<number>
          const now = yield* clock.now
          const rows = yield* anchoredUsers({ planIds, anchorDays: [...anchorDays], now })
          return rows.map((r) => r.user_id)
        }).pipe(Effect.orDie),
      expiringWithoutRenewal,
      renewalCandidates,
      lockUser,
      extendTo,
      lockedRecord,
      lockedCurrentOnPlan,
      expireRows,
      updateRecord
    } as const
  }),
  dependencies: [Catalog.Default]
}) {
  /** issue 35: the table in memory (`ServiceRowsMemory.ts`) over the catalogue and clock given */
  static readonly Test: Layer.Layer<ServiceRows, never, AppClock | Catalog> = Layer.effect(
    ServiceRows,
    Effect.map(Effect.all([AppClock, Catalog]), ([clock, catalog]) => ServiceRows.make(memoryServiceRows(clock, catalog)))
  )
}
