import * as Schema from "effect/Schema"
import { UserId } from "../platform/Ids.ts"

/** The entities of the support room, each one schema: the row it is read from and the answer it gives. */

export const TicketStatus = Schema.Literal("open", "closed")

/** A ticket ([D60]); the answers pick from it (the owner's id is never rendered). */
export const Ticket = Schema.Struct({
  id: Schema.Int,
  user_id: UserId,
  subject: Schema.String,
  status: TicketStatus,
  created_at: Schema.Date,
  last_reply_at: Schema.Date
})
export type Ticket = typeof Ticket.Type

export const Reply = Schema.Struct({
  id: Schema.Int,
  message: Schema.String,
  is_admin: Schema.Boolean,
  created_at: Schema.Date
}).annotations({ identifier: "SupportReply" })
export type Reply = typeof Reply.Type

/** A FAQ entry as staff see it ([D70]); the public list picks from it. */
export const FaqEntry = Schema.Struct({
  id: Schema.Int,
  question: Schema.String,
  answer: Schema.String,
  position: Schema.Int,
  is_public: Schema.Boolean
}).annotations({ identifier: "SupportAdminFaqEntry" })
export type FaqEntry = typeof FaqEntry.Type
