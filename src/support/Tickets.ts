import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"

export type TicketStatus = "open" | "closed"

export interface Ticket {
  readonly id: number
  readonly userId: number
  readonly subject: string
  readonly status: TicketStatus
  readonly createdAt: Date
  readonly lastReplyAt: Date
}

export interface TicketReply {
  readonly id: number
  readonly message: string
  readonly isAdmin: boolean
  readonly createdAt: Date
}

interface TicketRow {
  readonly id: number
  readonly user_id: number
  readonly subject: string
  readonly status: TicketStatus
  readonly created_at: Date
  readonly last_reply_at: Date
}

interface ReplyRow {
  readonly id: number
  readonly message: string
  readonly is_admin: boolean
  readonly created_at: Date
}

const toTicket = (r: TicketRow): Ticket => ({
  id: r.id,
  userId: r.user_id,
  subject: r.subject,
  status: r.status,
  createdAt: r.created_at,
  lastReplyAt: r.last_reply_at
})

const toReply = (r: ReplyRow): TicketReply => ({
  id: r.id,
  message: r.message,
  isAdmin: r.is_admin,
  createdAt: r.created_at
})

/**
 * Support tickets and their replies ([D60]). The opening message is stored as the first
 * reply; every reply moves `last_reply_at` and reopens a closed ticket. Times come from
 * `AppClock`, so the order of activity is the product's clock, not the database's.
 */
export class Tickets extends Context.Tag("Tickets")<Tickets, {
  /** the user's tickets, newest activity first */
  readonly listOf: (userId: number) => Effect.Effect<ReadonlyArray<Ticket>>
  readonly open: (input: { readonly userId: number; readonly subject: string; readonly message: string }) => Effect.Effect<Ticket>
  /** any user's ticket (staff); `ownedBy` narrows it to the caller's own */
  readonly find: (ticketId: number, ownedBy?: number) => Effect.Effect<Option.Option<Ticket>>
  readonly repliesOf: (ticketId: number) => Effect.Effect<ReadonlyArray<TicketReply>>
  /** adds a reply, moves `last_reply_at` and reopens the ticket */
  readonly reply: (input: {
    readonly ticketId: number
    readonly authorId: number
    readonly message: string
    readonly isAdmin: boolean
  }) => Effect.Effect<TicketReply>
  readonly close: (ticketId: number) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    Tickets,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock

      const listOf = (userId: number) =>
        sql<TicketRow>`
          select id, user_id, subject, status, created_at, last_reply_at
          from tickets where user_id = ${userId}
          order by last_reply_at desc, id desc`.pipe(Effect.map((rows) => rows.map(toTicket)), Effect.orDie)

      const open = (input: { readonly userId: number; readonly subject: string; readonly message: string }) =>
        Effect.gen(function*() {
          const now = yield* clock.now
          const [ticket] = yield* sql<TicketRow>`
            insert into tickets (user_id, subject, status, last_reply_at, created_at, updated_at)
            values (${input.userId}, ${input.subject}, 'open', ${now}, ${now}, ${now})
            returning id, user_id, subject, status, created_at, last_reply_at`
          yield* sql`
            insert into ticket_replies (ticket_id, author_id, message, is_admin, created_at)
            values (${ticket!.id}, ${input.userId}, ${input.message}, false, ${now})`
          return toTicket(ticket!)
        }).pipe(sql.withTransaction, Effect.orDie)

      const find = (ticketId: number, ownedBy?: number) =>
        (ownedBy === undefined
          ? sql<TicketRow>`
              select id, user_id, subject, status, created_at, last_reply_at from tickets where id = ${ticketId}`
          : sql<TicketRow>`
              select id, user_id, subject, status, created_at, last_reply_at from tickets
              where id = ${ticketId} and user_id = ${ownedBy}`).pipe(
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toTicket)),
          Effect.orDie
        )

      const repliesOf = (ticketId: number) =>
        sql<ReplyRow>`
          select id, message, is_admin, created_at from ticket_replies
          where ticket_id = ${ticketId} order by created_at, id`.pipe(Effect.map((rows) => rows.map(toReply)), Effect.orDie)

      const reply = (input: {
        readonly ticketId: number
        readonly authorId: number
        readonly message: string
        readonly isAdmin: boolean
      }) =>
        Effect.gen(function*() {
          const now = yield* clock.now
          const [row] = yield* sql<ReplyRow>`
            insert into ticket_replies (ticket_id, author_id, message, is_admin, created_at)
            values (${input.ticketId}, ${input.authorId}, ${input.message}, ${input.isAdmin}, ${now})
            returning id, message, is_admin, created_at`
          // [D60]: a reply to a closed ticket reopens it; last_reply_at never moves back
          yield* sql`
            update tickets
            set status = 'open', last_reply_at = greatest(last_reply_at, ${now}), updated_at = ${now}
            where id = ${input.ticketId}`
          return toReply(row!)
        }).pipe(sql.withTransaction, Effect.orDie)

      const close = (ticketId: number) =>
        Effect.gen(function*() {
          const now = yield* clock.now
          yield* sql`update tickets set status = 'closed', updated_at = ${now} where id = ${ticketId} and status <> 'closed'`
        }).pipe(Effect.orDie)

      return { listOf, open, find, repliesOf, reply, close }
    })
  )
}
