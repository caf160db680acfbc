import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import { orNotFound } from "../platform/Errors.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { Reply, Ticket } from "./Domain.ts"
import type { UserId } from "../platform/Ids.ts"

const TicketRow = Schema.typeSchema(Ticket)
const ReplyRow = Schema.typeSchema(Reply)
const Now = Schema.DateFromSelf

/**
 * Support tickets and their replies ([D60]). The opening message is stored as the first
 * reply; every reply moves `last_reply_at` and reopens a closed ticket. Times come from
 * `AppClock`, so the order of activity is the product's clock, not the database's. A ticket of
 * another user is a 404 like an unknown id ([D11]).
 */
export class Tickets extends Effect.Service<Tickets>()("support/Tickets", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const domainEvents = yield* DomainEvents
    const notifications = yield* Notifications

    const columns = sql`id, user_id, subject, status, created_at, last_reply_at`
    const listRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: TicketRow,
      execute: (userId) => sql`select ${columns} from tickets where user_id = ${userId} order by last_reply_at desc, id desc`
    })
    const insertTicket = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Int, subject: Schema.String, now: Now }),
      Result: TicketRow,
      execute: (t) => sql`
        insert into tickets (user_id, subject, status, last_reply_at, created_at, updated_at)
        values (${t.userId}, ${t.subject}, 'open', ${t.now}, ${t.now}, ${t.now})
        returning ${columns}`
    })
    const byId = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Int, ownedBy: Schema.NullOr(Schema.Int) }),
      Result: TicketRow,
      execute: (q) => sql`
        select ${columns} from tickets
        where id = ${q.id} and (${q.ownedBy}::int is null or user_id = ${q.ownedBy}::int)`
    })
    const repliesRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: ReplyRow,
      execute: (ticketId) => sql`
        select id, message, is_admin, created_at from ticket_replies where ticket_id = ${ticketId} order by created_at, id`
    })
    const insertReply = SqlSchema.single({
      Request: Schema.Struct({ ticketId: Schema.Int, authorId: Schema.Int, message: Schema.String, isAdmin: Schema.Boolean, now: Now }),
      Result: ReplyRow,
      execute: (r) => sql`
        insert into ticket_replies (ticket_id, author_id, message, is_admin, created_at)
        values (${r.ticketId}, ${r.authorId}, ${r.message}, ${r.isAdmin}, ${r.now})
        returning id, message, is_admin, created_at`
    })
    const touch = SqlSchema.void({
      Request: Schema.Struct({ ticketId: Schema.Int, now: Now }),
      // [D60]: a reply to a closed ticket reopens it; last_reply_at never moves back
      execute: (t) => sql`
        update tickets set status = 'open', last_reply_at = greatest(last_reply_at, ${t.now}), updated_at = ${t.now}
        where id = ${t.ticketId}`
    })
    const closeRow = SqlSchema.void({
      Request: Schema.Struct({ ticketId: Schema.Int, now: Now }),
      execute: (t) => sql`update tickets set status = 'closed', updated_at = ${t.now} where id = ${t.ticketId} and status <> 'closed'`
    })

    /** the ticket of `ownedBy`, or any user's for staff; else 404 */
    const find = (ticketId: number, ownedBy: number | null) => byId({ id: ticketId, ownedBy }).pipe(Effect.orDie, Effect.flatMap(orNotFound))

    const addReply = (ticketId: number, authorId: number, message: string, isAdmin: boolean) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const reply = yield* insertReply({ ticketId, authorId, message, isAdmin, now })
        yield* touch({ ticketId, now })
        // [D101]: with the reply, in its transaction
        yield* domainEvents.emit({
          type: "ticket.replied",
          data: {
            ticket_id: ticketId,
            reply_id: reply.id,
            author_id: authorId,
            is_staff: isAdmin,
            message,
            created_at: now.toISOString()
          }
        })
        return reply
      }).pipe(sql.withTransaction, Effect.orDie)

    return {
      /** the user's tickets, newest activity first */
      listOf: (userId: UserId) => Effect.orDie(listRows(userId)),

      open: (userId: UserId, input: { readonly subject: string; readonly message: string }) =>
        Effect.gen(function* () {
          const now = yield* clock.now
          const ticket = yield* insertTicket({ userId, subject: input.subject, now })
          yield* insertReply({ ticketId: ticket.id, authorId: userId, message: input.message, isAdmin: false, now })
          // [D101]: with the ticket, in its transaction
          yield* domainEvents.emit({
            type: "ticket.created",
            data: {
              id: ticket.id,
              user_id: userId,
              subject: input.subject,
              status: ticket.status,
              message: input.message,
              created_at: now.toISOString()
            }
          })
          return ticket
        }).pipe(sql.withTransaction, Effect.orDie, Effect.tap(domainEvents.wake)),

      /** the caller's ticket with every reply, oldest first */
      detail: (ticketId: number, userId: UserId) =>
        Effect.gen(function* () {
          const ticket = yield* find(ticketId, userId)
          return { ...ticket, replies: yield* Effect.orDie(repliesRows(ticket.id)) }
        }),

      reply: (ticketId: number, userId: UserId, message: string) =>
        Effect.flatMap(find(ticketId, userId), (ticket) => addReply(ticket.id, userId, message, false)).pipe(Effect.tap(domainEvents.wake)),

      /** closing a closed ticket is a 200 too ([D60]) */
      close: (ticketId: number, userId: UserId) =>
        Effect.flatMap(find(ticketId, userId), (ticket) => Effect.flatMap(clock.now, (now) => closeRow({ ticketId: ticket.id, now })).pipe(Effect.orDie)),

      /**
       * A staff reply to any ticket ([D70]): it reopens a closed ticket as a user's does (there is
       * news to read) and tells the owner by e-mail unless they turned notices off.
       */
      staffReply: (ticketId: number, staffId: number, message: string) =>
        Effect.gen(function* () {
          const ticket = yield* find(ticketId, null)
          const reply = yield* Effect.gen(function* () {
            const reply = yield* addReply(ticket.id, staffId, message, true)
            // [D96]: written with the reply, sent once (the reply's id is the occasion)
            yield* notifications.notify({
              userId: ticket.user_id,
              kind: "ticket-reply",
              dedupeKey: `ticket-reply:${reply.id}`,
              view: { ticket_id: ticket.id, ticket_subject: ticket.subject, message }
            })
            return reply
          }).pipe(sql.withTransaction, Effect.orDie)
          yield* notifications.wake
          return reply
        })
    } as const
  }),
  dependencies: [Notifications.Default]
}) {}
