import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomBytes, randomUUID } from "node:crypto"
import { isIP } from "node:net"
import { backoffMs, type ClaimedMessage, GIVE_UP_AFTER_MS, Outbox } from "../outbox/Outbox.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey, hmacSha256Hex } from "../platform/Crypto.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { makePage } from "../platform/Page.ts"
import { bareHost, checkAddresses, resolveHost, urlShapeProblem } from "./Addresses.ts"
import {
  type CreatedWebhookEndpoint,
  DELIVERY_STATUSES,
  type WebhookDelivery,
  type WebhookEndpoint,
  type WebhookEvent
} from "./Domain.ts"

/** the outbox channel of webhook deliveries */
export const WEBHOOK_CHANNEL = "webhook"
/** [D101]: a receiver that has not answered in this long has failed this attempt */
export const WEBHOOK_TIMEOUT_MS = 10_000
/** admins' pages, as invoices */
export const WEBHOOKS_PAGE_SIZE = 15

const EndpointRow = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  events: Schema.Unknown,
  created_at: Schema.DateFromSelf,
  updated_at: Schema.DateFromSelf
})
type EndpointRow = typeof EndpointRow.Type
const PagedEndpointRow = Schema.Struct({ ...EndpointRow.fields, total_rows: Schema.Int })

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

/** what the sender needs: the endpoint's current URL and sealed secret, the delivery's sealed body */
const SendRow = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  secret: Schema.String,
  body: Schema.String
})

const Id = Schema.Struct({ id: Schema.Int })
const Count = Schema.Struct({ n: Schema.Int })

/** the outbox message of one delivery: only its id (the body is kept, sealed, by this room) */
const MessageBody = Schema.parseJson(Schema.Struct({ delivery_id: Schema.Int }))
const decodeMessage = Schema.decodeUnknownSync(MessageBody)

const eventsOf = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((e): e is string => typeof e === "string") : []

const toEndpoint = (row: EndpointRow): WebhookEndpoint => ({
  id: row.id,
  url: row.url,
  description: row.description,
  events: eventsOf(typeof row.events === "string" ? JSON.parse(row.events) : row.events),
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

/** How one POST to a receiver went. */
interface PostOutcome {
  readonly statusCode: number | null
  readonly latencyMs: number
  readonly error: string | null
}

/**
 * One signed POST ([D101]): the URL rules again, the host resolved once and every answer checked,
 * the request sent to the checked address itself (the Host header and TLS name stay the URL's), no
 * redirect followed, 10 s at most.
 */
const postOnce = async (rawUrl: string, body: string, headers: Record<string, string>, allowPrivate: boolean): Promise<PostOutcome> => {
  const shape = urlShapeProblem(rawUrl, allowPrivate)
  if (shape !== undefined) return { statusCode: null, latencyMs: 0, error: shape }
  const url = new URL(rawUrl)
  const host = bareHost(url)
  let addresses
  try {
    addresses = await resolveHost(host)
  } catch (error) {
    return { statusCode: null, latencyMs: 0, error: `DNS lookup failed: ${error instanceof Error ? error.message : String(error)}` }
  }
  const checked = checkAddresses(url, addresses, allowPrivate)
  if (!checked.ok) return { statusCode: null, latencyMs: 0, error: checked.reason }
  const target = new URL(url.href)
  target.hostname = checked.address.family === 6 ? `[${checked.address.address}]` : checked.address.address
  const started = performance.now()
  try {
    const response = await fetch(target, {
      method: "POST",
      headers: { ...headers, host: url.host },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      ...(url.protocol === "https:" && isIP(host) === 0 ? { tls: { serverName: host } } : {})
    })
    const latencyMs = Math.round(performance.now() - started)
    await response.body?.cancel().catch(() => {})
    return { statusCode: response.status, latencyMs, error: response.ok ? null : `HTTP ${response.status}` }
  } catch (error) {
    const latencyMs = Math.round(performance.now() - started)
    const timedOut = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")
    return {
      statusCode: null,
      latencyMs,
      error: timedOut ? `timed out after ${WEBHOOK_TIMEOUT_MS / 1000} s` : (error instanceof Error ? error.message : String(error)).slice(0, 300)
    }
  }
}

/**
 * The webhooks room ([D101]): admins' endpoints, the events other rooms emit inside their own
 * transactions (one outbox row per subscribed endpoint, ordered per endpoint), and the delivery
 * the outbox calls for the `webhook` channel: signed as [D40] signs, every try logged.
 */
export class Webhooks extends Effect.Service<Webhooks>()("webhooks/Webhooks", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const allowPrivate = config.webhooksAllowPrivate === true

    // ---- endpoints ----------------------------------------------------------------------

    const insertEndpoint = SqlSchema.single({
      Request: Schema.Struct({
        url: Schema.String,
        description: Schema.NullOr(Schema.String),
        events: Schema.String,
        secret: Schema.String,
        now: Schema.DateFromSelf
      }),
      Result: EndpointRow,
      execute: (r) => sql`
        insert into webhook_endpoints (url, description, events, secret, created_at, updated_at)
        values (${r.url}, ${r.description}, ${r.events}::jsonb, ${r.secret}, ${r.now}, ${r.now})
        returning id, url, description, events, created_at, updated_at`
    })

    const findEndpoint = SqlSchema.findOne({
      Request: Schema.Int,
      Result: EndpointRow,
      execute: (id) => sql`select id, url, description, events, created_at, updated_at from webhook_endpoints where id = ${id}`
    })

    const updateEndpoint = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.Int,
        url: Schema.NullOr(Schema.String),
        setDescription: Schema.Boolean,
        description: Schema.NullOr(Schema.String),
        events: Schema.NullOr(Schema.String),
        now: Schema.DateFromSelf
      }),
      Result: EndpointRow,
      execute: (r) => sql`
        update webhook_endpoints set
          url = coalesce(${r.url}, url),
          description = case when ${r.setDescription} then ${r.description} else description end,
          events = coalesce(${r.events}::jsonb, events),
          updated_at = ${r.now}
        where id = ${r.id}
        returning id, url, description, events, created_at, updated_at`
    })

    const deleteEndpoint = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Id,
      execute: (id) => sql`delete from webhook_endpoints where id = ${id} returning id`
    })

    const listEndpoints = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Int, offset: Schema.Int }),
      Result: PagedEndpointRow,
      execute: (r) => sql`
        select id, url, description, events, created_at, updated_at, count(*) over ()::int as total_rows
        from webhook_endpoints order by id limit ${r.limit} offset ${r.offset}`
    })
    const countEndpoints = SqlSchema.single({
      Request: Schema.Void,
      Result: Count,
      execute: () => sql`select count(*)::int as n from webhook_endpoints`
    })

    /** the URL rules at create/update time: 422 `errors.url` */
    const checkUrl = (raw: string) =>
      Effect.gen(function*() {
        const shape = urlShapeProblem(raw, allowPrivate)
        if (shape !== undefined) return yield* Effect.fail(ValidationError.field("url", shape))
        const url = new URL(raw)
        // an https name that does not resolve now is kept: it is checked again before every send;
        // [D117]: http:// needs every address known now to be private, so it must resolve
        const addresses = yield* Effect.promise(() => resolveHost(bareHost(url)).catch(() => undefined))
        if (addresses === undefined || addresses.length === 0) {
          if (url.protocol === "http:") return yield* Effect.fail(ValidationError.field("url", "The url host does not resolve."))
          return url.href
        }
        const checked = checkAddresses(url, addresses, allowPrivate)
        if (!checked.ok) return yield* Effect.fail(ValidationError.field("url", checked.reason))
        return url.href
      })

    const create = (input: {
      readonly url: string
      readonly events: ReadonlyArray<WebhookEvent>
      readonly description?: string | null | undefined
    }): Effect.Effect<CreatedWebhookEndpoint, ValidationError> =>
      Effect.gen(function*() {
        const url = yield* checkUrl(input.url.trim())
        const secret = `whsec_${randomBytes(24).toString("hex")}`
        const row = yield* insertEndpoint({
          url,
          description: input.description ?? null,
          events: JSON.stringify(input.events),
          secret: appKey.encrypt(secret),
          now: yield* clock.now
        }).pipe(Effect.orDie)
        return { ...toEndpoint(row), secret }
      })

    const get = (id: number): Effect.Effect<WebhookEndpoint, NotFound> =>
      findEndpoint(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: (row) => Effect.succeed(toEndpoint(row)) }))
      )

    const update = (id: number, input: {
      readonly url?: string | undefined
      readonly events?: ReadonlyArray<WebhookEvent> | undefined
      readonly description?: string | null | undefined
    }): Effect.Effect<WebhookEndpoint, NotFound | ValidationError> =>
      Effect.gen(function*() {
        yield* get(id)
        const url = input.url === undefined ? null : yield* checkUrl(input.url.trim())
        const row = yield* updateEndpoint({
          id,
          url,
          setDescription: input.description !== undefined,
          description: input.description ?? null,
          events: input.events === undefined ? null : JSON.stringify(input.events),
          now: yield* clock.now
        }).pipe(Effect.orDie)
        return yield* Option.match(row, { onNone: () => Effect.fail(new NotFound()), onSome: (r) => Effect.succeed(toEndpoint(r)) })
      })

    /** the endpoint and its delivery log go; its pending deliveries are dropped when their turn comes */
    const remove = (id: number): Effect.Effect<void, NotFound> =>
      deleteEndpoint(id).pipe(
        Effect.orDie,
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: () => Effect.void }))
      )

    const listPage = (pageNo: number) =>
      Effect.gen(function*() {
        const rows = yield* listEndpoints({ limit: WEBHOOKS_PAGE_SIZE, offset: (pageNo - 1) * WEBHOOKS_PAGE_SIZE })
        const total = rows.length > 0 ? rows[0]!.total_rows : (yield* countEndpoints(undefined)).n
        return makePage({
          rows: rows.map(toEndpoint),
          total,
          page: pageNo,
          perPage: WEBHOOKS_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/webhooks`
        })
      }).pipe(Effect.orDie)

    // ---- events -------------------------------------------------------------------------

    const subscribed = SqlSchema.findAll({
      Request: Schema.String,
      Result: Id,
      execute: (type) => sql`select id from webhook_endpoints where events @> ${JSON.stringify([type])}::jsonb order by id`
    })

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
      Effect.gen(function*() {
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

    // ---- sending ------------------------------------------------------------------------

    const findSend = SqlSchema.findOne({
      Request: Schema.Int,
      Result: SendRow,
      execute: (id) => sql`
        select d.id, e.url, e.secret, d.body
        from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
        where d.id = ${id}`
    })

    const insertAttempt = SqlSchema.void({
      Request: Schema.Struct({
        deliveryId: Schema.Int,
        at: Schema.DateFromSelf,
        statusCode: Schema.NullOr(Schema.Int),
        latencyMs: Schema.Int,
        error: Schema.NullOr(Schema.String)
      }),
      execute: (r) => sql`
        insert into webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, error)
        values (${r.deliveryId}, ${r.at}, ${r.statusCode}, ${r.latencyMs}, ${r.error})`
    })

    const setStatus = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, status: Schema.Literal(...DELIVERY_STATUSES), at: Schema.NullOr(Schema.DateFromSelf) }),
      execute: (r) => sql`
        update webhook_deliveries set status = ${r.status}, delivered_at = coalesce(${r.at}, delivered_at) where id = ${r.id}`
    })

    /** the outbox's delivery of the `webhook` channel: one signed POST, its attempt logged */
    const deliver = (message: ClaimedMessage): Effect.Effect<void, { readonly reason: string }> =>
      Effect.gen(function*() {
        const { delivery_id } = decodeMessage(message.body)
        const found = yield* findSend(delivery_id).pipe(Effect.orDie)
        // its endpoint was deleted: nothing to send any more
        if (Option.isNone(found)) return
        const row = found.value
        const body = appKey.decrypt(row.body)
        const now = yield* clock.now
        const t = Math.floor(now.getTime() / 1000)
        const signature = `t=${t},v1=${hmacSha256Hex(appKey.decrypt(row.secret), `${t}.${body}`)}`
        const headers = {
          "content-type": "application/json",
          "user-agent": "vpn-api-webhooks/1",
          "x-signature": signature
        }
        const outcome = yield* Effect.promise(() => postOnce(row.url, body, headers, allowPrivate))
        const at = yield* clock.now
        yield* insertAttempt({
          deliveryId: row.id,
          at,
          statusCode: outcome.statusCode,
          latencyMs: outcome.latencyMs,
          error: outcome.error
        }).pipe(Effect.orDie)
        if (outcome.error === null) {
          yield* setStatus({ id: row.id, status: "delivered", at }).pipe(Effect.orDie)
          return
        }
        // the outbox gives the message up when its next try would fall past 24 h: the log says so
        const next = at.getTime() + backoffMs(message.attempts + 1)
        if (next >= message.createdAt.getTime() + GIVE_UP_AFTER_MS) {
          yield* setStatus({ id: row.id, status: "failed", at: null }).pipe(Effect.orDie)
        }
        return yield* Effect.fail({ reason: outcome.error })
      })

    yield* outbox.registerDelivery(WEBHOOK_CHANNEL, deliver)

    // ---- the delivery log -----------------------------------------------------------------

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
      Effect.gen(function*() {
        const attempts = rows.length === 0 ? [] : yield* attemptsOf(rows.map((r) => r.id))
        return rows.map((r): WebhookDelivery => ({
          id: r.id,
          event_id: r.event_id,
          type: r.type,
          status: r.status,
          created_at: r.created_at.toISOString(),
          delivered_at: r.delivered_at === null ? null : r.delivered_at.toISOString(),
          attempts: attempts.filter((a) => a.delivery_id === r.id).map((a) => ({
            attempted_at: a.attempted_at.toISOString(),
            status_code: a.status_code,
            latency_ms: a.latency_ms,
            error: a.error
          }))
        }))
      })

    /** an endpoint's deliveries, newest first, each with its attempts */
    const deliveriesPage = (endpointId: number, pageNo: number) =>
      Effect.gen(function*() {
        yield* get(endpointId)
        const rows = yield* listDeliveries({ endpointId, limit: WEBHOOKS_PAGE_SIZE, offset: (pageNo - 1) * WEBHOOKS_PAGE_SIZE })
          .pipe(Effect.orDie)
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
      Effect.gen(function*() {
        const updated = yield* sql.withTransaction(Effect.gen(function*() {
          const found = yield* findDelivery({ endpointId, id: deliveryId })
          if (Option.isNone(found)) return Option.none()
          yield* setStatus({ id: deliveryId, status: "pending", at: null })
          yield* enqueueDelivery(deliveryId, endpointId, found.value.type, `again:${randomUUID()}`)
          return yield* findDelivery({ endpointId, id: deliveryId })
        })).pipe(Effect.orDie)
        if (Option.isNone(updated)) return yield* Effect.fail(new NotFound())
        yield* outbox.wake
        const [delivery] = yield* withAttempts([updated.value]).pipe(Effect.orDie)
        return delivery!
      })

    return { create, get, update, remove, listPage, emit, emitMany, deliveriesPage, redeliver, wake: outbox.wake } as const
  }),
  dependencies: [Outbox.Default]
}) {}
