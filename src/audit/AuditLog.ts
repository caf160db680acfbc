import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { makePage } from "../platform/Page.ts"
import { ReadSql } from "../platform/ReadSql.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import { ActorKind, type AuditEntry, type AuditFilters } from "./Domain.ts"
import type { UserId } from "../platform/Ids.ts"

export const AUDIT_PAGE_SIZE = 15

const Insert = Schema.Struct({
  now: Schema.DateFromSelf,
  actorId: Schema.NullOr(Schema.Int),
  actorKind: ActorKind,
  action: Schema.String,
  resource: Schema.NullOr(Schema.String),
  subjectId: Schema.NullOr(Schema.Int),
  ip: Schema.NullOr(Schema.String),
  userAgent: Schema.NullOr(Schema.String)
})

/** rows as the drivers hand them over: the bigint id as text, dates as `Date` */
const RecordRow = Schema.Struct({
  id: Schema.NumberFromString,
  created_at: Schema.DateFromSelf,
  actor_id: Schema.NullOr(Schema.Int),
  actor_kind: ActorKind,
  action: Schema.String,
  resource: Schema.NullOr(Schema.String),
  subject_id: Schema.NullOr(Schema.Int),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
})
const ActivityRow = Schema.Struct({
  id: Schema.NumberFromString,
  event: Schema.String,
  created_at: Schema.DateFromSelf,
  via: ActorKind,
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
})
const Total = Schema.Struct({ total: Schema.NumberFromString })

const Filters = Schema.Struct({
  actor: Schema.NullOr(Schema.Int),
  action: Schema.NullOr(Schema.String),
  resource: Schema.NullOr(Schema.String),
  from: Schema.NullOr(Schema.DateFromSelf),
  to: Schema.NullOr(Schema.DateFromSelf),
  limit: Schema.Int,
  offset: Schema.Int
})
const OfUser = Schema.Struct({ userId: Schema.Int, limit: Schema.Int, offset: Schema.Int })

/**
 * The audit log of [D100]: append-only (`audit_log`; the database refuses UPDATE and DELETE).
 * Rooms append their security events, the HTTP layer every admin write; the time is the app's
 * clock, the address and user agent the request's ([D99]).
 */
export class AuditLog extends Effect.Service<AuditLog>()("audit/AuditLog", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // the log's searches may lag ([D126]): on the replicas when there are; entries are written on the primary
    const readSql = yield* ReadSql
    const clock = yield* AppClock
    const config = yield* AppConfig

    const insert = SqlSchema.void({
      Request: Insert,
      execute: (e) => sql`
        insert into audit_log (created_at, actor_id, actor_kind, action, resource, subject_id, ip, user_agent)
        values (${e.now}, ${e.actorId}, ${e.actorKind}, ${e.action}, ${e.resource}, ${e.subjectId}, ${e.ip}, ${e.userAgent})`
    })

    const where = (f: typeof Filters.Type) =>
      readSql`(${f.actor}::int is null or actor_id = ${f.actor})
        and (${f.action}::text is null or action = ${f.action})
        and (${f.resource}::text is null or resource = ${f.resource} or split_part(resource, ':', 2) = ${f.resource})
        and (${f.from}::timestamptz is null or created_at >= ${f.from})
        and (${f.to}::timestamptz is null or created_at <= ${f.to})`
    const searchRows = SqlSchema.findAll({
      Request: Filters,
      Result: RecordRow,
      execute: (f) => readSql`
        select id::text as id, created_at, actor_id, actor_kind, action, resource, subject_id, ip, user_agent
        from audit_log where ${where(f)}
        order by audit_log.created_at desc, audit_log.id desc limit ${f.limit} offset ${f.offset}`
    })
    const searchTotal = SqlSchema.single({
      Request: Filters,
      Result: Total,
      execute: (f) => readSql`select count(*)::text as total from audit_log where ${where(f)}`
    })
    const activityRows = SqlSchema.findAll({
      Request: OfUser,
      Result: ActivityRow,
      execute: (q) => readSql`
        select id::text as id, action as event, created_at, actor_kind as via, ip, user_agent
        from audit_log where subject_id = ${q.userId}
        order by audit_log.created_at desc, audit_log.id desc limit ${q.limit} offset ${q.offset}`
    })
    const activityTotal = SqlSchema.single({
      Request: OfUser,
      Result: Total,
      execute: (q) => readSql`select count(*)::text as total from audit_log where subject_id = ${q.userId}`
    })

    /** appends one entry, with the time and the request's address and user agent */
    const record = (entry: AuditEntry) =>
      Effect.gen(function* () {
        const origin = yield* FiberRef.get(requestOrigin)
        yield* insert({ ...entry, now: yield* clock.now, ip: origin.ip, userAgent: origin.userAgent })
      }).pipe(Effect.orDie)

    /** the caller's security events, newest first, paginated like invoices ([D99], [D36]) */
    const activityOf = (userId: UserId, page: number) =>
      Effect.gen(function* () {
        const query = { userId, limit: AUDIT_PAGE_SIZE, offset: (page - 1) * AUDIT_PAGE_SIZE }
        const [rows, { total }] = yield* Effect.all([activityRows(query), activityTotal(query)])
        return makePage({ rows, total, page, perPage: AUDIT_PAGE_SIZE, baseUrl: `${config.publicUrl}/v1/account/activity` })
      }).pipe(Effect.orDie)

    /** the log for admins, newest first, filtered ([D100]) */
    const search = (filters: AuditFilters, page: number) =>
      Effect.gen(function* () {
        const query = {
          actor: filters.actor ?? null,
          action: filters.action ?? null,
          resource: filters.resource ?? null,
          from: filters.from ?? null,
          to: filters.to ?? null,
          limit: AUDIT_PAGE_SIZE,
          offset: (page - 1) * AUDIT_PAGE_SIZE
        }
        const [rows, { total }] = yield* Effect.all([searchRows(query), searchTotal(query)])
        return makePage({
          rows,
          total,
          page,
          perPage: AUDIT_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/audit`,
          query: [
            ["actor", filters.actor === undefined ? undefined : String(filters.actor)],
            ["action", filters.action],
            ["resource", filters.resource],
            ["from", filters.from?.toISOString()],
            ["to", filters.to?.toISOString()]
          ]
        })
      }).pipe(Effect.orDie)

    return { record, activityOf, search } as const
  })
}) {}
