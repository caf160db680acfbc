import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../Api.ts"
import { CurrentUser } from "../http/Auth.ts"
import { Faq } from "./Faq.ts"
import { Tickets } from "./Tickets.ts"

const SupportHandlers = HttpApiBuilder.group(Api, "support", (handlers) =>
  Effect.gen(function* () {
    const tickets = yield* Tickets
    const faq = yield* Faq
    return handlers
      .handle("listTickets", () => Effect.flatMap(CurrentUser, (user) => tickets.listOf(user.userId)))
      .handle("createTicket", ({ payload }) => Effect.flatMap(CurrentUser, (user) => tickets.open(user.userId, payload)))
      .handle("getTicket", ({ path }) => Effect.flatMap(CurrentUser, (user) => tickets.detail(path.ticket, user.userId)))
      .handle("replyTicket", ({ path, payload }) => Effect.flatMap(CurrentUser, (user) => tickets.reply(path.ticket, user.userId, payload.message)))
      .handle("closeTicket", ({ path }) => Effect.flatMap(CurrentUser, (user) => tickets.close(path.ticket, user.userId)).pipe(Effect.as("Ticket closed.")))
      .handle("listFaq", () => faq.publicEntries)
  })
)

const SupportAdminHandlers = HttpApiBuilder.group(Api, "supportAdmin", (handlers) =>
  Effect.gen(function* () {
    const tickets = yield* Tickets
    const faq = yield* Faq
    return handlers
      .handle("staffReply", ({ path, payload }) => Effect.flatMap(CurrentUser, (staff) => tickets.staffReply(path.ticket, staff.userId, payload.message)))
      .handle("createFaq", ({ payload }) => faq.create(payload))
  })
)

/** Every handler of the support room; its services come from `DomainLive`. */
export const SupportHttpLive = Layer.mergeAll(SupportHandlers, SupportAdminHandlers)
