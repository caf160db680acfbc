import * as Schema from "effect/Schema"
import { EVENT_TYPES, type EventType } from "../events/Events.ts"

/** [D101]: exactly the events an endpoint may subscribe to: the domain events (`events/Events.ts`). */
export const WEBHOOK_EVENTS = EVENT_TYPES
export type WebhookEvent = EventType

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const

/** An endpoint as admins see it: never its secret (shown once, at creation). */
export const WebhookEndpoint = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Array(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}).annotations({ identifier: "WebhookEndpoint" })
export type WebhookEndpoint = typeof WebhookEndpoint.Type

/** `POST /v1/admin/webhooks` answers the endpoint with its signing secret, this once. */
export const CreatedWebhookEndpoint = Schema.Struct({
  ...WebhookEndpoint.fields,
  secret: Schema.String
}).annotations({ identifier: "CreatedWebhookEndpoint" })
export type CreatedWebhookEndpoint = typeof CreatedWebhookEndpoint.Type

/** One try of a delivery: the receiver's status code (none: no answer) and the time it took. */
export const WebhookAttempt = Schema.Struct({
  attempted_at: Schema.String,
  status_code: Schema.NullOr(Schema.Int),
  latency_ms: Schema.Int,
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "WebhookAttempt" })

/** One event for one endpoint; `event_id` is the body's `id`, the same on every try. */
export const WebhookDelivery = Schema.Struct({
  id: Schema.Int,
  event_id: Schema.String,
  type: Schema.String,
  status: Schema.Literal(...DELIVERY_STATUSES),
  created_at: Schema.String,
  delivered_at: Schema.NullOr(Schema.String),
  attempts: Schema.Array(WebhookAttempt)
}).annotations({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type
