import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppConfig } from "../../platform/Config.ts"
import { NotFound } from "../../platform/Errors.ts"
import { ReadSql } from "../../platform/ReadSql.ts"
import { makePage } from "../../platform/Page.ts"
import { Reply, TicketStatus } from "../Domain.ts"
import { UserId } from "../../platform/Ids.ts"

const PER_PAGE = 15

const Ticket = Schema.Struct({
  id: Schema.Int,
  user_id: UserId,
  subject: Schema.String,
  status: TicketStatus,
  created_at: Schema.DateFromSelf,
  last_reply_at: Schema.DateFromSelf
})
const TicketRow = Schema.Struct({ ...Ticket.fields, total_rows: Schema.Int })
const Query = Schema.Struct({ status: Schema.NullOr(Schema.String), limit: Schema.Int, offset: Schema.Int })

/** [D121]: every user's tickets for the console, most recently active first, and one with its replies. */
export class TicketDesk extends Effect.Service<TicketDesk>()("support/TicketDesk", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // the list may lag ([D126]): on the replicas when there are; one ticket is read on the primary
    const readSql = yield* ReadSql
    const config = yield* AppConfig
    const statusFilter = (status: string | null) => (status === null ? readSql`` : readSql`where status = ${status}`)
    const pageRows = SqlSchema.findAll({
      Request: Query,
      Result: TicketRow,
      execute: (q) => readSql`
        select id, user_id, subject, status, created_at, last_reply_at, count(*) over ()::int as total_rows
        from tickets ${statusFilter(q.status)}
        order by last_reply_at desc, id desc limit ${q.limit} offset ${q.offset}`
    })
    const oneRow = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Ticket,
      execute: (id) => sql`select id, user_id, subject, status, created_at, last_reply_at from tickets where id = ${id}`
    })
    const replyRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.typeSchema(Reply),
      execute: (id) => sql`select id, message, is_admin, created_at from ticket_replies where ticket_id = ${id} order by created_at, id`
    })
    return {
      page: (status: string | undefined, page: number) =>
        Effect.map(Effect.orDie(pageRows({ status: status ?? null, limit: PER_PAGE, offset: (page - 1) * PER_PAGE })), (rows) =>
          makePage({
            rows: rows.map(({ total_rows: _, ...ticket }) => ticket),
            total: rows[0]?.total_rows ?? 0,
            page,
            perPage: PER_PAGE,
            baseUrl: `${config.publicUrl}/v1/admin/tickets`,
            query: [["status", status]]
          })
        ),
      detail: (id: number) =>
        Effect.gen(function* () {
          const found = yield* Effect.orDie(oneRow(id))
          if (Option.isNone(found)) return yield* Effect.fail(new NotFound())
          return { ...found.value, replies: yield* Effect.orDie(replyRows(id)) }
        })
    } as const
  })
}) {}
