import * as Schema from "effect/Schema"

/**
 * The domain events ([D101]): one schema per event type, grouped by the room that emits it. The
 * schema is the event's `data` as a webhook receiver gets it (docs/api.md lists them); an emit
 * with another payload does not compile, and what goes out is the payload encoded by its schema
 * (a field the schema does not name is not sent).
 */

const Id = Schema.Int
const IsoTime = Schema.String

// ---- accounts --------------------------------------------------------------------------------

/** a new account's public fields */
export const UserRegistered = Schema.Struct({ id: Id, name: Schema.String, email: Schema.String, created_at: IsoTime })

// ---- subscriptions (the services room) ---------------------------------------------------------

/** the period a payment (or a trial) bought */
export const ServiceActivated = Schema.Struct({
  id: Id,
  user_id: Id,
  plan_id: Id,
  cycle_id: Id,
  status: Schema.Literal("active"),
  period_start: IsoTime,
  expires_at: IsoTime
})
export const ServiceExpired = Schema.Struct({
  id: Id,
  user_id: Id,
  plan_id: Id,
  cycle_id: Id,
  status: Schema.Literal("expired"),
  expires_at: IsoTime
})
export const ServiceSuspendedEvent = Schema.Struct({
  id: Id,
  user_id: Id,
  plan_id: Id,
  cycle_id: Id,
  status: Schema.Literal("suspended"),
  expires_at: IsoTime
})
/** [D108]: a plan change took effect: the service on its new plan and cycle, and its new period */
export const ServiceChanged = Schema.Struct({
  id: Id,
  user_id: Id,
  plan_id: Id,
  cycle_id: Id,
  kind: Schema.Literal("upgrade", "downgrade"),
  starts_at: IsoTime,
  expires_at: IsoTime
})
/** [D111]: a service cancelled, `at` as the request asked (`period_end`: `cancel_at` is when it ends) */
export const ServiceCancelled = Schema.Struct({
  id: Id,
  user_id: Id,
  plan_id: Id,
  cycle_id: Id,
  status: Schema.String,
  at: Schema.Literal("period_end", "now"),
  cancel_at: Schema.NullOr(IsoTime),
  expires_at: IsoTime
})

// ---- billing ---------------------------------------------------------------------------------

/**
 * An invoice's public fields. A renewal invoice of the jobs ([D80]) carries only `uuid`, `user_id`,
 * `service_id`, `amount`, `currency`, `status` and `due_date` (so the others are optional).
 */
export const InvoiceCreated = Schema.Struct({
  uuid: Schema.String,
  user_id: Schema.NullOr(Id),
  service_id: Schema.NullOr(Id),
  plan_id: Schema.optional(Id),
  cycle_id: Schema.optional(Id),
  amount: Schema.String,
  discount: Schema.optional(Schema.String),
  currency: Schema.String,
  status: Schema.String,
  gateway: Schema.optional(Schema.String),
  due_date: IsoTime,
  paid_at: Schema.optional(Schema.NullOr(IsoTime)),
  created_at: Schema.optional(IsoTime)
})
export const InvoicePaid = Schema.Struct({
  uuid: Schema.String,
  user_id: Schema.NullOr(Id),
  service_id: Schema.NullOr(Id),
  plan_id: Id,
  cycle_id: Id,
  amount: Schema.String,
  discount: Schema.String,
  currency: Schema.String,
  status: Schema.String,
  gateway: Schema.String,
  due_date: IsoTime,
  paid_at: Schema.NullOr(IsoTime),
  created_at: IsoTime
})
/** [D110]: the refunded invoice (its status stays `paid`), what is refunded so far, and the credit note */
export const InvoiceRefunded = Schema.Struct({
  ...InvoicePaid.fields,
  refunded_amount: Schema.String,
  credit_note: Schema.Struct({
    id: Id,
    amount: Schema.String,
    currency: Schema.String,
    to: Schema.Literal("balance", "gateway"),
    reason: Schema.String,
    created_at: IsoTime
  })
})

// ---- vpn -------------------------------------------------------------------------------------

/** [D96]: a quota period crossed 80 % or 100 % */
export const UsageThreshold = Schema.Struct({
  service_id: Id,
  user_id: Id,
  threshold: Schema.Literal(80, 100),
  period: Schema.String,
  used_bytes: Schema.Int,
  limit_bytes: Schema.Number
})
/** [D90] */
export const DeviceCreated = Schema.Struct({
  id: Id,
  name: Schema.String,
  platform: Schema.String,
  created_at: IsoTime,
  user_id: Id
})
export const DeviceDeleted = Schema.Struct({ id: Id, user_id: Id })

// ---- support ---------------------------------------------------------------------------------

export const TicketCreated = Schema.Struct({
  id: Id,
  user_id: Id,
  subject: Schema.String,
  status: Schema.String,
  message: Schema.String,
  created_at: IsoTime
})
export const TicketReplied = Schema.Struct({
  ticket_id: Id,
  reply_id: Id,
  author_id: Id,
  is_staff: Schema.Boolean,
  message: Schema.String,
  created_at: IsoTime
})

// ---- the union -------------------------------------------------------------------------------

/** Every event type ([D101], [D108], [D110], [D111]): what a webhook endpoint may subscribe to. */
export const EVENT_TYPES = [
  "user.registered",
  "invoice.created",
  "invoice.paid",
  "service.activated",
  "service.expired",
  "service.suspended",
  "usage.threshold",
  "device.created",
  "device.deleted",
  "ticket.created",
  "ticket.replied",
  "service.changed",
  "invoice.refunded",
  "service.cancelled"
] as const

/** Each event type's payload schema. */
export const EventPayloads = {
  "user.registered": UserRegistered,
  "invoice.created": InvoiceCreated,
  "invoice.paid": InvoicePaid,
  "invoice.refunded": InvoiceRefunded,
  "service.activated": ServiceActivated,
  "service.expired": ServiceExpired,
  "service.suspended": ServiceSuspendedEvent,
  "service.changed": ServiceChanged,
  "service.cancelled": ServiceCancelled,
  "usage.threshold": UsageThreshold,
  "device.created": DeviceCreated,
  "device.deleted": DeviceDeleted,
  "ticket.created": TicketCreated,
  "ticket.replied": TicketReplied
} as const satisfies Record<(typeof EVENT_TYPES)[number], Schema.Schema.AnyNoContext>

export type EventType = (typeof EVENT_TYPES)[number]
/** the `data` of an event of type `T`, as its room builds it */
export type EventData<T extends EventType> = (typeof EventPayloads)[T]["Type"]
/** one event: its type and its payload, checked together */
export type DomainEvent = { readonly [T in EventType]: { readonly type: T; readonly data: EventData<T> } }[EventType]

/** an event's payload as its schema encodes it (only the fields it names) */
export const encodeEvent = <T extends EventType>(type: T, data: EventData<T>): Readonly<Record<string, unknown>> =>
  Schema.encodeSync(EventPayloads[type] as unknown as Schema.Schema<EventData<T>, Readonly<Record<string, unknown>>>)(data)
