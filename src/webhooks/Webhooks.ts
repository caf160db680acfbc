import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { DomainEvents } from "../events/DomainEvents.ts"
import { encodeEvent } from "../events/Events.ts"
import { Outbox } from "../outbox/Outbox.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { WebhookDeliveries } from "./Deliveries.ts"
import { type WebhookEvent } from "./Domain.ts"
import { WebhookSender } from "./Sender.ts"

const Id = Schema.Struct({ id: Schema.Int })

/**
 * The webhooks room ([D101]): the events other rooms emit inside their own transactions (one
 * outbox row per subscribed endpoint, ordered per endpoint). The admins' endpoints are
 * `Endpoints.ts`, the deliveries and their log `Deliveries.ts`, the outbox's delivery `Sender.ts`.
 */
export class Webhooks extends Effect.Service<Webhooks>()("webhooks/Webhooks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const outbox = yield* Outbox
    const { enqueueDelivery, insertDelivery } = yield* WebhookDeliveries
    // the outbox's delivery of the `webhook` channel is registered with the events that need it
    yield* WebhookSender

    const subscribed = SqlSchema.findAll({
      Request: Schema.String,
      Result: Id,
      execute: (type) => sql`select id from webhook_endpoints where events @> ${JSON.stringify([type])}::jsonb order by id`
    })

    /**
     * [D101]: an event, in the caller's transaction: one delivery (and outbox row) per endpoint
     * subscribed to `type`; nothing when none is. One event id for all of them. Call the outbox's
     * `wake` after the commit for a prompt send (the jobs send it otherwise).
     */
    const emit = (type: WebhookEvent, data: Readonly<Record<string, unknown>>): Effect.Effect<void> => emitMany(type, [data])

    /**
     * Many events of one type (the jobs' batches): the subscribers are read once, so a batch with
     * no endpoint subscribed costs one query, not one per row.
     */
    const emitMany = (type: WebhookEvent, events: ReadonlyArray<Readonly<Record<string, unknown>>>): Effect.Effect<void> =>
      Effect.gen(function* () {
        if (events.length === 0) return
        const endpoints = yield* subscribed(type)
        if (endpoints.length === 0) return
        const now = yield* clock.now
        for (const data of events) {
          const eventId = randomUUID()
          const body = appKey.encrypt(JSON.stringify({ id: eventId, type, created_at: now.toISOString(), data }))
          for (const endpoint of endpoints) {
            const delivery = yield* insertDelivery({ endpointId: endpoint.id, eventId, type, body, now })
            yield* enqueueDelivery(delivery.id, endpoint.id, type, "first")
          }
        }
      }).pipe(Effect.orDie)

    return { emit, emitMany, wake: outbox.wake } as const
  }),
  dependencies: [Outbox.Default, WebhookDeliveries.Default, WebhookSender.Default]
}) {}

/** The events port ([D101]) as this room provides it: each payload encoded by its schema, then `emit`. */
export const DomainEventsLive = Layer.effect(
  DomainEvents,
  Effect.map(Webhooks, (webhooks) =>
    DomainEvents.of({
      emit: (event) => webhooks.emit(event.type, encodeEvent(event.type, event.data)),
      emitMany: (type, events) =>
        webhooks.emitMany(
          type,
          events.map((data) => encodeEvent(type, data))
        ),
      wake: webhooks.wake
    })
  )
).pipe(Layer.provide(Webhooks.Default))
