import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AppClock } from "../../platform/Clock.ts"
import { AppConfig } from "../../platform/Config.ts"
import { makePage } from "../../platform/Page.ts"
import { ReadSql } from "../../platform/ReadSql.ts"

const PER_PAGE = 15

// the schemas the contract shows live in `Domain.ts` (issue 34: no server code in the contract)
import { AdminInvoiceItem, RevenueDay } from "./Domain.ts"
import { UserId } from "../../platform/Ids.ts"
export { AdminInvoiceItem, RevenueDay }

const Row = Schema.Struct({
  ...AdminInvoiceItem.fields,
  created_at: Schema.DateFromSelf,
  paid_at: Schema.NullOr(Schema.DateFromSelf),
  total_rows: Schema.Int
})
const Query = Schema.Struct({ userId: Schema.NullOr(UserId), status: Schema.NullOr(Schema.String), limit: Schema.Int, offset: Schema.Int })

/** [D121]: every user's invoices for the console, and the revenue of the last days per currency. */
export class InvoiceLedger extends Effect.Service<InvoiceLedger>()("billing/InvoiceLedger", {
  effect: Effect.gen(function* () {
    // an admin list and a report: on the replicas when there are ([D126])
    const sql = yield* ReadSql
    const config = yield* AppConfig
    const clock = yield* AppClock
    const filters = (q: Pick<typeof Query.Encoded, "userId" | "status">) =>
      sql`where true ${q.userId === null ? sql`` : sql`and user_id = ${q.userId}`} ${q.status === null ? sql`` : sql`and status = ${q.status}`}`
    const pageRows = SqlSchema.findAll({
      Request: Query,
      Result: Row,
      execute: (q) => sql`
        select id, uuid::text as uuid, user_id, amount::text as amount, refunded_amount::text as refunded_amount, currency, status,
          gateway, created_at, paid_at, count(*) over ()::int as total_rows
        from invoices ${filters(q)}
        order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`
    })
    const revenueRows = SqlSchema.findAll({
      Request: Schema.Struct({ since: Schema.DateFromSelf }),
      Result: RevenueDay,
      execute: (q) => sql`
        select to_char(paid_at at time zone 'UTC', 'YYYY-MM-DD') as day, currency, sum(amount)::text as amount
        from invoices where status = 'paid' and paid_at >= ${q.since}
        group by 1, 2 order by 1, 2`
    })
    return {
      page: (userId: UserId | undefined, status: string | undefined, page: number) =>
        Effect.map(Effect.orDie(pageRows({ userId: userId ?? null, status: status ?? null, limit: PER_PAGE, offset: (page - 1) * PER_PAGE })), (rows) =>
          makePage({
            rows: rows.map(({ total_rows: _, ...invoice }) => invoice),
            total: rows[0]?.total_rows ?? 0,
            page,
            perPage: PER_PAGE,
            baseUrl: `${config.publicUrl}/v1/admin/invoices`,
            query: [
              ["user_id", userId === undefined ? undefined : String(userId)],
              ["status", status]
            ]
          })
        ),
      revenue: (days: number) => Effect.flatMap(clock.now, (now) => Effect.orDie(revenueRows({ since: new Date(now.getTime() - days * 86_400_000) })))
    } as const
  })
}) {}
