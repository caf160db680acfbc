import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import { Outbox } from "../outbox/Outbox.ts"
import { AppConfig } from "../platform/Config.ts"
import { NotFound } from "../platform/Errors.ts"
import { makePage } from "../platform/Page.ts"
import { DELIVERY_STATUSES, type WebhookDelivery } from "./Domain.ts"
import { WebhookEndpoints, WEBHOOKS_PAGE_SIZE } from "./Endpoints.ts"

/** the outbox channel of webhook deliveries */
export const WEBHOOK_CHANNEL = "webhook"

const DeliveryRow = Schema.Struct({
  id: Schema.Int,
  endpoint_id: Schema.Int,
  event_id: Schema.String,
  type: Schema.String,
  status: Schema.Literal(...DELIVERY_STATUSES),
  created_at: Schema.DateFromSelf,
  delivered_at: Schema.NullOr(Schema.DateFromSelf)
})
const PagedDeliveryRow = Schema.Struct({ ...DeliveryRow.fields, total_rows: Schema.Int })

const AttemptRow = Schema.Struct({
  delivery_id: Schema.Int,
  attempted_at: Schema.DateFromSelf,
  status_code: Schema.NullOr(Schema.Int),
  latency_ms: Schema.Int,
  error: Schema.NullOr(Schema.String)
})

const Id = Schema.Struct({ id: Schema.Int })
const Count = Schema.Struct({ n: Schema.Int })

/**
 * [D101]: the deliveries of events to endpoints (`webhook_deliveries`, `webhook_attempts`): one
 * outbox row each, ordered per endpoint; the admins' delivery log and redelivery.
 */
export class WebhookDeliveries extends Effect.Service<WebhookDeliveries>()("webhooks/WebhookDeliveries", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const { get } = yield* WebhookEndpoints

    const insertDelivery = SqlSchema.single({
      Request: Schema.Struct({
        endpointId: Schema.Int,
        eventId: Schema.String,
        type: Schema.String,
        body: Schema.String,
        now: Schema.DateFromSelf
      }),
      Result: Id,
      execute: (r) => sql`
        insert into webhook_deliveries (endpoint_id, event_id, type, body, created_at)
        values (${r.endpointId}, ${r.eventId}::uuid, ${r.type}, ${r.body}, ${r.now})
        returning id`
    })

    const enqueueDelivery = (deliveryId: number, endpointId: number, type: string, occasion: string) =>
      outbox.enqueue({
        channel: WEBHOOK_CHANNEL,
        kind: type,
        dedupeKey: `webhook:${deliveryId}:${occasion}`,
        // [D101]: one endpoint's deliveries go out in order, one at a time
        orderingKey: `webhook:${endpointId}`,
        // the URL may carry a receiver's token: the admins' outbox list names the endpoint only
        recipient: `webhook endpoint ${endpointId}`,
        subject: type,
        body: JSON.stringify({ delivery_id: deliveryId })
      })

    /** [D101]: a delivery's state, set by the sender and by a redelivery */
    const setStatus = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, status: Schema.Literal(...DELIVERY_STATUSES), at: Schema.NullOr(Schema.DateFromSelf) }),
      execute: (r) => sql`
        update webhook_deliveries set status = ${r.status}, delivered_at = coalesce(${r.at}, delivered_at) where id = ${r.id}`
    })

    const listDeliveries = SqlSchema.findAll({
      Request: Schema.Struct({ endpointId: Schema.Int, limit: Schema.Int, offset: Schema.Int }),
      Result: PagedDeliveryRow,
      execute: (r) => sql`
        select id, endpoint_id, event_id::text as event_id, type, status, created_at, delivered_at, count(*) over ()::int as total_rows
        from webhook_deliveries where endpoint_id = ${r.endpointId}
        order by id desc limit ${r.limit} offset ${r.offset}`
    })
    const countDeliveries = SqlSchema.single({
      Request: Schema.Int,
      Result: Count,
      execute: (endpointId) => sql`select count(*)::int as n from webhook_deliveries where endpoint_id = ${endpointId}`
    })
    const attemptsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.Int),
      Result: AttemptRow,
      execute: (ids) => sql`
        select delivery_id, attempted_at, status_code, latency_ms, error
        from webhook_attempts where delivery_id in ${sql.in(ids)} order by id`
    })
    const findDelivery = SqlSchema.findOne({
      Request: Schema.Struct({ endpointId: Schema.Int, id: Schema.Int }),
      Result: DeliveryRow,
      execute: (r) => sql`
        select id, endpoint_id, event_id::text as event_id, type, status, created_at, delivered_at
        from webhook_deliveries where id = ${r.id} and endpoint_id = ${r.endpointId}`
    })

    const withAttempts = (rows: ReadonlyArray<typeof DeliveryRow.Type>) =>
      Effect.gen(function* () {
        const attempts = rows.length === 0 ? [] : yield* attemptsOf(rows.map((r) => r.id))
        return rows.map(
          (r): WebhookDelivery => ({
            id: r.id,
            event_id: r.event_id,
            type: r.type,
            status: r.status,
            created_at: r.created_at.toISOString(),
            delivered_at: r.delivered_at === null ? null : r.delivered_at.toISOString(),
            attempts: attempts
              .filter((a) => a.delivery_id === r.id)
              .map((a) => ({
                attempted_at: a.attempted_at.toISOString(),
                status_code: a.status_code,
                latency_ms: a.latency_ms,
                error: a.error
              }))
          })
        )
      })

    /** an endpoint's deliveries, newest first, each with its attempts */
    const deliveriesPage = (endpointId: number, pageNo: number) =>
      Effect.gen(function* () {
        yield* get(endpointId)
        const rows = yield* listDeliveries({ endpointId, limit: WEBHOOKS_PAGE_SIZE, offset: (pageNo - 1) * WEBHOOKS_PAGE_SIZE }).pipe(Effect.orDie)
        const total = rows.length > 0 ? rows[0]!.total_rows : (yield* countDeliveries(endpointId).pipe(Effect.orDie)).n
        return makePage({
          rows: yield* withAttempts(rows).pipe(Effect.orDie),
          total,
          page: pageNo,
          perPage: WEBHOOKS_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/webhooks/${endpointId}/deliveries`
        })
      })

    /** sends a delivery again (same event id and body, a fresh signature), after the endpoint's earlier ones */
    const redeliver = (endpointId: number, deliveryId: number): Effect.Effect<WebhookDelivery, NotFound> =>
      Effect.gen(function* () {
        const updated = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const found = yield* findDelivery({ endpointId, id: deliveryId })
              if (Option.isNone(found)) return Option.none()
              yield* setStatus({ id: deliveryId, status: "pending", at: null })
              yield* enqueueDelivery(deliveryId, endpointId, found.value.type, `again:${randomUUID()}`)
              return yield* findDelivery({ endpointId, id: deliveryId })
            })
          )
          .pipe(Effect.orDie)
        if (Option.isNone(updated)) return yield* Effect.fail(new NotFound())
        yield* outbox.wake
        const [delivery] = yield* withAttempts([updated.value]).pipe(Effect.orDie)
        return delivery!
      })

    return { insertDelivery, enqueueDelivery, setStatus, deliveriesPage, redeliver } as const
  }),
  dependencies: [Outbox.Default, WebhookEndpoints.Default]
}) {}
