import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { AdminAuthentication, Authentication } from "../http/Auth.ts"
import { Confirmation, Ok } from "../http/Envelope.ts"
import { Body, boolean, IdParam, integer, string } from "../platform/Fields.ts"
import { CreateTicketRateLimit, TicketReplyRateLimit } from "../http/RateLimit.ts"

// ---- resources (the spec's Support ticket, Reply and FAQ entry) ------------------------

/** ISO 8601 timestamps, as every room renders them. */
const Timestamp = Schema.String

export const Reply = Schema.Struct({
  id: Schema.Int,
  message: Schema.String,
  is_admin: Schema.Boolean,
  created_at: Timestamp
}).annotations({ identifier: "SupportReply" })

/** An entry of `GET /v1/tickets`: `last_reply_at` is the list's only. */
export const TicketListItem = Schema.Struct({
  id: Schema.Int,
  subject: Schema.String,
  status: Schema.Literal("open", "closed"),
  created_at: Timestamp,
  last_reply_at: Timestamp
}).annotations({ identifier: "SupportTicketListItem" })

/** `POST /v1/tickets` answers the new ticket without its replies. */
export const TicketCreated = Schema.Struct({
  id: Schema.Int,
  subject: Schema.String,
  status: Schema.Literal("open", "closed"),
  created_at: Timestamp
}).annotations({ identifier: "SupportTicket" })

/** `GET /v1/tickets/{ticket}`: the ticket with every reply, oldest first. */
export const TicketDetail = Schema.Struct({
  ...TicketCreated.fields,
  replies: Schema.Array(Reply)
}).annotations({ identifier: "SupportTicketDetail" })

export const FaqEntry = Schema.Struct({
  id: Schema.Int,
  question: Schema.String,
  answer: Schema.String
}).annotations({ identifier: "SupportFaqEntry" })

/** [D70]: the admin answer adds what only staff set. */
export const AdminFaqEntry = Schema.Struct({
  ...FaqEntry.fields,
  position: Schema.Int,
  is_public: Schema.Boolean
}).annotations({ identifier: "SupportAdminFaqEntry" })

// ---- payloads: [D13] subject 1-255, message 1-10 000 -----------------------------------

const message = string("message", { max: 10_000 })

const TicketPath = Schema.Struct({ ticket: IdParam })

// ---- groups --------------------------------------------------------------------------

/** Tickets of the caller and the public FAQ ([D60]). */
export class SupportApi extends HttpApiGroup.make("support")
  .add(HttpApiEndpoint.get("listTickets", "/tickets")
    .addSuccess(Ok(Schema.Array(TicketListItem), { identifier: "SupportTicketList" })))
  .add(HttpApiEndpoint.post("createTicket", "/tickets")
    .setPayload(Body({ subject: string("subject", { max: 255 }), message }))
    .addSuccess(Ok(TicketCreated, { identifier: "SupportTicketCreated", status: 201 }))
    .middleware(CreateTicketRateLimit))
  .add(HttpApiEndpoint.get("getTicket", "/tickets/:ticket")
    .setPath(TicketPath)
    .addSuccess(Ok(TicketDetail, { identifier: "SupportTicketDetailResponse" })))
  .add(HttpApiEndpoint.post("replyTicket", "/tickets/:ticket/reply")
    .setPath(TicketPath)
    .setPayload(Body({ message }))
    .addSuccess(Ok(Reply, { identifier: "SupportReplyCreated", status: 201 }))
    .middleware(TicketReplyRateLimit))
  .add(HttpApiEndpoint.put("closeTicket", "/tickets/:ticket/close")
    .setPath(TicketPath)
    .addSuccess(Confirmation("SupportTicketClosed")))
  // everything above needs a token; the FAQ below is public (the spec's "none")
  .middlewareEndpoints(Authentication)
  .add(HttpApiEndpoint.get("listFaq", "/faq")
    .addSuccess(Ok(Schema.Array(FaqEntry), { identifier: "SupportFaqList" })))
{}

/** `/v1/admin/tickets/{ticket}/reply`, `/v1/admin/faq` ([D70]). */
export class SupportAdminApi extends HttpApiGroup.make("supportAdmin")
  .add(HttpApiEndpoint.post("staffReply", "/admin/tickets/:ticket/reply")
    .setPath(TicketPath)
    .setPayload(Body({ message }))
    .addSuccess(Ok(Reply, { identifier: "SupportStaffReplyCreated", status: 201 })))
  .add(HttpApiEndpoint.post("createFaq", "/admin/faq")
    .setPayload(Body({
      question: string("question", { max: 1000 }),
      answer: string("answer", { max: 10_000 }),
      position: Schema.optional(integer("position", { min: 0 })),
      is_public: Schema.optional(boolean("is_public"))
    }))
    .addSuccess(Ok(AdminFaqEntry, { identifier: "SupportFaqCreated", status: 201 })))
  .middlewareEndpoints(AdminAuthentication)
{}
