import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication } from "../http/Auth.ts"
import { OkPage } from "../http/Envelope.ts"
import { oneOf } from "../platform/Fields.ts"
import { OUTBOX_STATUSES, OutboxMessage } from "./Domain.ts"

/** `GET /v1/admin/outbox?status=failed|pending|sent` ([D96]): what was sent, waits, or was given up. */
export class OutboxAdminApi extends HttpApiGroup.make("outboxAdmin")
  .add(
    HttpApiEndpoint.get("listOutbox", "/admin/outbox")
      .setUrlParams(Schema.Struct({
        page: Schema.optional(PageParam),
        status: Schema.optional(oneOf("status", OUTBOX_STATUSES))
      }))
      .addSuccess(OkPage(OutboxMessage, "OutboxPage"))
  )
  .middlewareEndpoints(AdminAuthentication)
{}
