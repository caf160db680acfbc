import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { orNotFound } from "../http/Errors.ts"
import { Contacts } from "../accounts/Contacts.ts"
import { CurrentUser } from "../http/Auth.ts"
import { NotFound } from "../http/Errors.ts"
import { AppConfig } from "../platform/Config.ts"
import { sendLater } from "../platform/Mailer.ts"
import { Faq, type FaqEntryRow } from "./Faq.ts"
import { staffReplyMail } from "./Mails.ts"
import { type Ticket, type TicketReply, Tickets } from "./Tickets.ts"

const reply = (r: TicketReply) => ({
  id: r.id,
  message: r.message,
  is_admin: r.isAdmin,
  created_at: r.createdAt.toISOString()
})

const ticket = (t: Ticket) => ({
  id: t.id,
  subject: t.subject,
  status: t.status,
  created_at: t.createdAt.toISOString()
})

const faqEntry = (f: FaqEntryRow) => ({ id: f.id, question: f.question, answer: f.answer })

const SupportHandlers = HttpApiBuilder.group(Api, "support", (handlers) =>
  Effect.gen(function*() {
    const tickets = yield* Tickets
    const faq = yield* Faq

    /** the caller's own ticket; another user's is a 404 like an unknown id ([D11]) */
    const ownTicket = (ticketId: number) =>
      Effect.flatMap(CurrentUser, (user) => Effect.flatMap(tickets.find(ticketId, user.userId), orNotFound))

    return handlers
      .handle("listTickets", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const rows = yield* tickets.listOf(user.userId)
          return rows.map((t) => ({ ...ticket(t), last_reply_at: t.lastReplyAt.toISOString() }))
        }))
      .handle("createTicket", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          return ticket(yield* tickets.open({ userId: user.userId, subject: payload.subject, message: payload.message }))
        }))
      .handle("getTicket", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* ownTicket(path.ticket)
          const replies = yield* tickets.repliesOf(found.id)
          return { ...ticket(found), replies: replies.map(reply) }
        }))
      .handle("replyTicket", ({ path, payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const found = yield* ownTicket(path.ticket)
          return reply(yield* tickets.reply({ ticketId: found.id, authorId: user.userId, message: payload.message, isAdmin: false }))
        }))
      .handle("closeTicket", ({ path }) =>
        Effect.gen(function*() {
          const found = yield* ownTicket(path.ticket)
          // closing a closed ticket is a 200 too ([D60])
          yield* tickets.close(found.id)
          return "Ticket closed."
        }))
      .handle("listFaq", () => Effect.map(faq.publicEntries, (rows) => rows.map(faqEntry)))
  }))

const SupportAdminHandlers = HttpApiBuilder.group(Api, "supportAdmin", (handlers) =>
  Effect.gen(function*() {
    const tickets = yield* Tickets
    const faq = yield* Faq
    const contacts = yield* Contacts
    const config = yield* AppConfig

    return handlers
      .handle("staffReply", ({ path, payload }) =>
        Effect.gen(function*() {
          const staff = yield* CurrentUser
          const found = yield* Effect.flatMap(tickets.find(path.ticket), orNotFound)
          // a staff reply reopens a closed ticket as a user's does ([D60]): there is news to read
          const created = yield* tickets.reply({
            ticketId: found.id,
            authorId: staff.userId,
            message: payload.message,
            isAdmin: true
          })
          const owner = yield* contacts.find(found.userId)
          if (Option.isSome(owner) && owner.value.emailNotifications) {
            yield* sendLater(staffReplyMail({ appUrl: config.appUrl, to: owner.value, ticket: found, message: payload.message }))
          }
          return reply(created)
        }))
      .handle("createFaq", ({ payload }) =>
        Effect.map(
          faq.create({
            question: payload.question,
            answer: payload.answer,
            position: payload.position ?? 0,
            isPublic: payload.is_public ?? true
          }),
          (row) => ({ ...faqEntry(row), position: row.position, is_public: row.is_public })
        ))
  }))

export const SupportHttpLive = Layer.mergeAll(SupportHandlers, SupportAdminHandlers).pipe(
  Layer.provide(Layer.mergeAll(Tickets.Live, Faq.Live, Contacts.Default))
)
