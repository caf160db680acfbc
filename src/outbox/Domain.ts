import * as Schema from "effect/Schema"

export const OUTBOX_STATUSES = ["pending", "sent", "failed"] as const
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number]

/**
 * One message of the outbox as admins see it ([D96]): what, to whom, how it went. Never the body:
 * mail bodies carry reset and verification tokens, webhook bodies are the receivers' business.
 */
export const OutboxMessage = Schema.Struct({
  id: Schema.Int,
  channel: Schema.String,
  kind: Schema.String,
  recipient: Schema.String,
  subject: Schema.String,
  status: Schema.Literal(...OUTBOX_STATUSES),
  attempts: Schema.Int,
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  next_attempt_at: Schema.NullOr(Schema.String),
  sent_at: Schema.NullOr(Schema.String),
  updated_at: Schema.String
}).annotations({ identifier: "OutboxMessage" })
export type OutboxMessage = typeof OutboxMessage.Type
