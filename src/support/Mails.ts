import type { Contact } from "../accounts/Contacts.ts"
import type { Mail } from "../platform/Mailer.ts"
import type { Ticket } from "./Domain.ts"

/** The notice of a staff reply: names the ticket, carries the reply, points at the ticket id. */
export const staffReplyMail = (input: {
  readonly appUrl: string
  readonly to: Contact
  readonly ticket: Ticket
  readonly message: string
}): Mail => ({
  to: input.to.email,
  subject: `Re: [Ticket #${input.ticket.id}] ${input.ticket.subject}`,
  text: [
    `Hello ${input.to.name},`,
    "",
    `Our support team replied to your ticket #${input.ticket.id} "${input.ticket.subject}":`,
    "",
    input.message,
    "",
    `Read the whole conversation and answer it in the app (ticket #${input.ticket.id}, GET /v1/tickets/${input.ticket.id}).`,
    `${input.appUrl}`,
    "",
    "You receive this e-mail because notifications are on in your account settings."
  ].join("\n")
})
