import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication } from "../http/Middleware.ts"
import { OkPage } from "../http/Envelope.ts"
import { oneOf } from "../platform/Fields.ts"
import { OUTBOX_STATUSES, OutboxMessage } from "./Domain.ts"

/** `GET /v1/admin/outbox?status=failed|pending|sent` ([D96]): what was sent, waits, or was given up. */
export class OutboxAdminApi extends HttpApiGroup.make("outboxAdmin")
  .annotate(OpenApi.Description, "The e-mail outbox, for admins.")
  .add(
    HttpApiEndpoint.get("listOutbox", "/admin/outbox")
      .annotateContext(
        describe("List outgoing e-mails (admin)", "The e-mail outbox (pending, sent or failed), newest first, paginated; never the message bodies.")
      )
      .setUrlParams(
        Schema.Struct({
          page: Schema.optional(PageParam),
          status: Schema.optional(oneOf("status", OUTBOX_STATUSES))
        })
      )
      .addSuccess(OkPage(OutboxMessage, "OutboxPage"))
  )
  .middlewareEndpoints(AdminAuthentication) {}
