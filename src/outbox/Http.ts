import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import { Api } from "../Api.ts"
import { pageResponse } from "../http/Envelope.ts"
import { OutboxMessage } from "./Domain.ts"
import { OutboxAdmin } from "./Admin.ts"

/** The admins' view of the outbox; the service comes from `DomainLive`. */
export const OutboxHttpLive = HttpApiBuilder.group(Api, "outboxAdmin", (handlers) =>
  Effect.gen(function* () {
    const outbox = yield* OutboxAdmin
    return handlers.handle("listOutbox", ({ urlParams }) =>
      Effect.map(outbox.listPage(urlParams.status, urlParams.page ?? 1), (page) => pageResponse(OutboxMessage, page))
    )
  })
)
