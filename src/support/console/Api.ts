import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Ok, OkPage } from "../../http/Envelope.ts"
import { NotFoundResponse } from "../../http/Errors.ts"
import { IdParam, oneOf } from "../../platform/Fields.ts"
import { PageParam } from "../../platform/Page.ts"
import { Reply, Ticket } from "../Domain.ts"

const AdminTicket = Ticket.annotations({ identifier: "SupportAdminTicket" })

/** [D121]: the console's ticket queue and a ticket with its replies (staff reply: `supportAdmin`). */
export class SupportConsoleApi extends HttpApiGroup.make("supportConsole")
  .annotate(OpenApi.Description, "Every user's tickets, for the console (admins).")
  .add(
    HttpApiEndpoint.get("listTickets", "/admin/tickets")
      .annotateContext(describe("List all tickets (admin)", "Every user's tickets with their owner, 15 a page, most recently active first; `status` filters."))
      .setUrlParams(Schema.Struct({ status: Schema.optional(oneOf("status", ["open", "closed"] as const)), page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(AdminTicket, "SupportAdminTicketPage"))
  )
  .add(
    HttpApiEndpoint.get("getTicket", "/admin/tickets/:ticket")
      .annotateContext(describe("Get any ticket (admin)", "A ticket with its owner and every reply, oldest first."))
      .setPath(Schema.Struct({ ticket: IdParam }))
      .addSuccess(Ok(Schema.Struct({ ...Ticket.fields, replies: Schema.Array(Reply) }), { identifier: "SupportAdminTicketDetail" }))
      .addError(NotFoundResponse)
  )
  .middlewareEndpoints(AdminAuthentication) {}
