import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Layer from "effect/Layer"
import * as Effect from "effect/Effect"
import { Api } from "../../Api.ts"
import { TicketDesk } from "./Reads.ts"

const SupportConsoleHandlers = HttpApiBuilder.group(Api, "supportConsole", (handlers) =>
  Effect.gen(function* () {
    const desk = yield* TicketDesk
    return handlers
      .handle("listTickets", ({ urlParams }) => desk.page(urlParams.status, urlParams.page ?? 1))
      .handle("getTicket", ({ path }) => desk.detail(path.ticket))
  })
)

export const SupportConsoleHttpLive = SupportConsoleHandlers.pipe(Layer.provide(TicketDesk.Default))
