import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { makePage } from "../platform/Page.ts"
import { type OutboxMessage, type OutboxStatus } from "./Domain.ts"
import { OUTBOX_PAGE_SIZE } from "./Messages.ts"
import { outboxMetrics, type OutboxDepthRow } from "./OutboxMetrics.ts"

const ListRow = Schema.Struct({
  id: Schema.Int,
  channel: Schema.String,
  kind: Schema.String,
  recipient: Schema.String,
  subject: Schema.String,
  status: Schema.Literal("pending", "sent", "failed"),
  attempts: Schema.Int,
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  next_attempt_at: Schema.DateFromSelf,
  sent_at: Schema.NullOr(Schema.DateFromSelf),
  updated_at: Schema.DateFromSelf,
  total_rows: Schema.Int
})

const Count = Schema.Struct({ n: Schema.Int })

/** [D96], [D102]: the admins' list of the outbox and its depth for /metrics. */
export class OutboxAdmin extends Effect.Service<OutboxAdmin>()("outbox/OutboxAdmin", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const runtime = yield* Effect.runtime<never>()
    const outboxFigures = yield* outboxMetrics

    const listRows = SqlSchema.findAll({
      Request: Schema.Struct({ status: Schema.NullOr(Schema.String), limit: Schema.Int, offset: Schema.Int }),
      Result: ListRow,
      execute: (r) => sql`
        select id, channel, kind, recipient, subject, status, attempts, last_error, created_at, next_attempt_at, sent_at,
               updated_at, count(*) over ()::int as total_rows
        from outbox
        where ${r.status === null ? sql`true` : sql`status = ${r.status}`}
        order by id desc
        limit ${r.limit} offset ${r.offset}`
    })
    const countRows = SqlSchema.single({
      Request: Schema.NullOr(Schema.String),
      Result: Count,
      execute: (status) => sql`select count(*)::int as n from outbox where ${status === null ? sql`true` : sql`status = ${status}`}`
    })

    /** the admins' list, newest first, paginated like invoices; never a body */
    const listPage = (status: OutboxStatus | undefined, pageNo: number) =>
      Effect.gen(function* () {
        const rows = yield* listRows({
          status: status ?? null,
          limit: OUTBOX_PAGE_SIZE,
          offset: (pageNo - 1) * OUTBOX_PAGE_SIZE
        })
        const total = rows.length > 0 ? rows[0]!.total_rows : (yield* countRows(status ?? null)).n
        return makePage<OutboxMessage>({
          rows: rows.map((r) => ({
            id: r.id,
            channel: r.channel,
            kind: r.kind,
            recipient: r.recipient,
            subject: r.subject,
            status: r.status,
            attempts: r.attempts,
            last_error: r.last_error,
            created_at: r.created_at.toISOString(),
            next_attempt_at: r.status === "pending" ? r.next_attempt_at.toISOString() : null,
            sent_at: r.sent_at === null ? null : r.sent_at.toISOString(),
            updated_at: r.updated_at.toISOString()
          })),
          total,
          page: pageNo,
          perPage: OUTBOX_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/outbox`,
          query: [["status", status]]
        })
      }).pipe(Effect.orDie)

    const depthRows = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({
        channel: Schema.String,
        kind: Schema.String,
        status: Schema.Literal("pending", "failed"),
        n: Schema.Int,
        oldest_seconds: Schema.Number
      }),
      execute: (now) => sql`
        select channel, kind, status, count(*)::int as n,
               greatest(0, extract(epoch from (${now}::timestamptz - min(created_at))))::float8 as oldest_seconds
        from outbox where status in ('pending', 'failed')
        group by channel, kind, status`
    })
    /** the depth of [D102], read when /metrics is scraped; a failed read keeps the last figures */
    const depth: Effect.Effect<ReadonlyArray<OutboxDepthRow> | undefined> = clock.now.pipe(
      Effect.flatMap(depthRows),
      Effect.map((rows) =>
        rows.map((r): OutboxDepthRow => ({ channel: r.channel, kind: r.kind, status: r.status, count: r.n, oldestSeconds: r.oldest_seconds }))
      ),
      // a slow database does not hold the scrape
      Effect.timeoutTo({ duration: "2 seconds", onTimeout: () => undefined, onSuccess: (rows) => rows }),
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("outbox: depth not read for the metrics", cause), undefined))
    )
    outboxFigures.depthFrom(() => Runtime.runPromise(runtime)(depth))

    return { listPage } as const
  })
}) {}
