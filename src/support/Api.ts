import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { AdminAuthentication, Authentication, CreateTicketRateLimit, TicketReplyRateLimit } from "../http/Middleware.ts"
import { Confirmation, Ok } from "../http/Envelope.ts"
import { Body, boolean, IdParam, integer, string } from "../platform/Fields.ts"
import { FaqEntry, Reply, Ticket } from "./Domain.ts"

// ---- resources (the spec's Support ticket, Reply and FAQ entry), picked from the room's entities ----

/** An entry of `GET /v1/tickets`: `last_reply_at` is the list's only. */
export const TicketListItem = Ticket.pick("id", "subject", "status", "created_at", "last_reply_at").annotations({ identifier: "SupportTicketListItem" })

/** `POST /v1/tickets` answers the new ticket without its replies. */
export const CreatedTicket = Ticket.pick("id", "subject", "status", "created_at").annotations({ identifier: "SupportTicket" })

/** `GET /v1/tickets/{ticket}`: the ticket with every reply, oldest first. */
export const TicketDetail = Schema.Struct({
  ...CreatedTicket.fields,
  replies: Schema.Array(Reply)
}).annotations({ identifier: "SupportTicketDetail" })

export const PublicFaqEntry = FaqEntry.pick("id", "question", "answer").annotations({ identifier: "SupportFaqEntry" })

// ---- payloads: [D13] subject 1-255, message 1-10 000 -----------------------------------

const message = string("message", { max: 10_000 })

const TicketPath = Schema.Struct({ ticket: IdParam })

// ---- groups --------------------------------------------------------------------------

/** Tickets of the caller and the public FAQ ([D60]). */
export class SupportApi extends HttpApiGroup.make("support")
  .annotate(OpenApi.Description, "Support tickets and the FAQ.")
  .add(
    HttpApiEndpoint.get("listTickets", "/tickets")
      .annotateContext(describe("List your tickets", "Your support tickets with their status and last reply time."))
      .addSuccess(Ok(Schema.Array(TicketListItem), { identifier: "SupportTicketList" }))
  )
  .add(
    HttpApiEndpoint.post("createTicket", "/tickets")
      .annotateContext(describe("Open a ticket", "A new ticket whose message is its first reply. Rate limited."))
      .setPayload(Body({ subject: string("subject", { max: 255 }), message }))
      .addSuccess(Ok(CreatedTicket, { identifier: "SupportTicketCreated", status: 201 }))
      .middleware(CreateTicketRateLimit)
  )
  .add(
    HttpApiEndpoint.get("getTicket", "/tickets/:ticket")
      .annotateContext(describe("Get a ticket", "One of your tickets with every reply, oldest first. Another user's ticket is 404."))
      .setPath(TicketPath)
      .addSuccess(Ok(TicketDetail, { identifier: "SupportTicketDetailResponse" }))
  )
  .add(
    HttpApiEndpoint.post("replyTicket", "/tickets/:ticket/reply")
      .annotateContext(describe("Reply to a ticket", "Adds your reply; a reply reopens a closed ticket. Rate limited."))
      .setPath(TicketPath)
      .setPayload(Body({ message }))
      .addSuccess(Ok(Reply, { identifier: "SupportReplyCreated", status: 201 }))
      .middleware(TicketReplyRateLimit)
  )
  .add(
    HttpApiEndpoint.put("closeTicket", "/tickets/:ticket/close")
      .annotateContext(describe("Close a ticket", "Closes the ticket (closing a closed one is 200)."))
      .setPath(TicketPath)
      .addSuccess(Confirmation("SupportTicketClosed"))
  )
  // everything above needs a token; the FAQ below is public (the spec's "none")
  .middlewareEndpoints(Authentication)
  .add(
    HttpApiEndpoint.get("listFaq", "/faq")
      .annotateContext(describe("List the FAQ", "The public FAQ entries in order. No credential."))
      .addSuccess(Ok(Schema.Array(PublicFaqEntry), { identifier: "SupportFaqList" }))
  ) {}

/** `/v1/admin/tickets/{ticket}/reply`, `/v1/admin/faq` ([D70]). */
export class SupportAdminApi extends HttpApiGroup.make("supportAdmin")
  .annotate(OpenApi.Description, "Staff replies and the FAQ, for admins.")
  .add(
    HttpApiEndpoint.post("staffReply", "/admin/tickets/:ticket/reply")
      .annotateContext(describe("Reply as staff (admin)", "Adds a staff reply (`is_admin: true`) and reopens the ticket if closed."))
      .setPath(TicketPath)
      .setPayload(Body({ message }))
      .addSuccess(Ok(Reply, { identifier: "SupportStaffReplyCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.post("createFaq", "/admin/faq")
      .annotateContext(describe("Add a FAQ entry (admin)", "A question and answer, with a position and whether it is public."))
      .setPayload(
        Body({
          question: string("question", { max: 1000 }),
          answer: string("answer", { max: 10_000 }),
          position: Schema.optional(integer("position", { min: 0 })),
          is_public: Schema.optional(boolean("is_public"))
        })
      )
      .addSuccess(Ok(FaqEntry, { identifier: "SupportFaqCreated", status: 201 }))
  )
  .middlewareEndpoints(AdminAuthentication) {}
