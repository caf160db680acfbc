import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { isIP } from "node:net"
import { backoffMs, type ClaimedMessage, GIVE_UP_AFTER_MS } from "../outbox/Messages.ts"
import { Outbox } from "../outbox/Outbox.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey, hmacSha256Hex } from "../platform/Crypto.ts"
import { bareHost, checkAddresses, resolveHost, urlShapeProblem } from "./Addresses.ts"
import { WEBHOOK_CHANNEL, WebhookDeliveries } from "./Deliveries.ts"
import { WebhookMetrics } from "./WebhookMetrics.ts"

/** [D101]: a receiver that has not answered in this long has failed this attempt */
export const WEBHOOK_TIMEOUT_MS = 10_000

/** what the sender needs: the endpoint's current URL and sealed secret, the delivery's sealed body */
const SendRow = Schema.Struct({
  id: Schema.Int,
  url: Schema.String,
  secret: Schema.String,
  body: Schema.String
})

/** the outbox message of one delivery: only its id (the body is kept, sealed, by this room) */
const MessageBody = Schema.parseJson(Schema.Struct({ delivery_id: Schema.Int }))
const decodeMessage = Schema.decodeUnknownSync(MessageBody)

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
  let addresses: Awaited<ReturnType<typeof resolveHost>>
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
 * [D101]: the delivery the outbox calls for the `webhook` channel: one signed POST (signed as
 * [D40] signs), every try logged. Registered with the outbox when the layer is built.
 */
export class WebhookSender extends Effect.Service<WebhookSender>()("webhooks/WebhookSender", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const config = yield* AppConfig
    const outbox = yield* Outbox
    const webhookMetrics = yield* WebhookMetrics
    const { setStatus } = yield* WebhookDeliveries
    const allowPrivate = config.webhooksAllowPrivate === true

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

    /** the outbox's delivery of the `webhook` channel: one signed POST, its attempt logged */
    const deliver = (message: ClaimedMessage): Effect.Effect<void, { readonly reason: string }> =>
      Effect.gen(function* () {
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
        webhookMetrics.attempt(outcome)
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

    return { deliver } as const
  }),
  dependencies: [Outbox.Default, WebhookDeliveries.Default, WebhookMetrics.Default]
}) {}
