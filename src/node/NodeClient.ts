import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { PeersBatch } from "../vpn/NodeProtocol.ts"

/**
 * The node routes of the API as the node agent calls them ([D54], [D92], [D94]), over plain
 * HTTP with the node token. The answers are decoded loosely on purpose: an API without [D92]
 * answers no `meta.revision`, and the agent then fetches the full list every time.
 */

export interface NodeClientConfig {
  /** base URL of the API, without `/v1` (`https://api.example.com`) */
  readonly apiUrl: string
  readonly token: Redacted.Redacted<string>
}

/** The API could not be reached or did not answer as expected: the agent backs off and retries. */
export class ApiUnavailable extends Data.TaggedError("ApiUnavailable")<{ readonly message: string }> {}

/** [D92]: the API does not know the revision any more (422 `errors.since`): fetch the full list. */
export class SinceRefused extends Data.TaggedError("SinceRefused")<{ readonly since: string }> {}

/** A peer of the node's list: `removed` only in an answer to `?since=` ([D92]). */
const PeerEntry = Schema.Struct({
  public_key: Schema.String,
  allowed_ips: Schema.optional(Schema.String),
  enabled: Schema.optional(Schema.Boolean),
  removed: Schema.optional(Schema.Boolean),
  /** [D103]: Mbps both ways; null or absent (an API without [D103]): not shaped */
  speed_limit_mbps: Schema.optional(Schema.NullOr(Schema.Int))
})
export type PeerEntry = typeof PeerEntry.Type

const PeerList = Schema.Struct({
  data: Schema.Array(PeerEntry),
  meta: Schema.optional(
    Schema.Struct({
      revision: Schema.optional(
        Schema.Union(
          Schema.String,
          Schema.Number.pipe(
            Schema.transform(Schema.String, {
              decode: (n) => String(n),
              encode: (s) => Number(s)
            })
          )
        )
      )
    })
  )
})

/** [D106]: an OpenVPN server's entry, loosely: `removed`, or `enabled` with the speed */
const CredentialEntry = Schema.Struct({
  username: Schema.String,
  enabled: Schema.optional(Schema.Boolean),
  removed: Schema.optional(Schema.Boolean),
  speed_limit_mbps: Schema.optional(Schema.NullOr(Schema.Int))
})

const CredentialList = Schema.Struct({
  data: Schema.Array(Schema.Union(CredentialEntry, Schema.Unknown)),
  meta: Schema.Struct({
    revision: Schema.Number,
    /** issue 34: usernames whose password was replaced after `since` */
    rotated: Schema.optional(Schema.Array(Schema.String))
  })
})

export interface PeerListAnswer {
  readonly peers: ReadonlyArray<PeerEntry>
  /** none: the API keeps no revisions ([D92] absent): fetch the full list again next time */
  readonly revision: Option.Option<string>
  /** true when the answer is the whole list, false for the changes after `since` */
  readonly full: boolean
}

export interface OpenVpnAllowance {
  readonly allowed: boolean
  readonly speedLimitMbps: number | null
}

/** [D103]: the speed of an allowed session; an API without it answers none */
const AuthAnswer = Schema.Struct({
  data: Schema.Struct({ speed_limit_mbps: Schema.optional(Schema.NullOr(Schema.Int)) })
})

export interface CounterEntry {
  readonly public_key: string
  readonly rx_total: number
  readonly tx_total: number
  /** [D107]: unix seconds of the peer's last handshake (0 = never) */
  readonly latest_handshake?: number
}

const REQUEST_TIMEOUT = Duration.seconds(30)

export interface NodeClientShape {
  readonly peers: (since: Option.Option<string>) => Effect.Effect<PeerListAnswer, ApiUnavailable | SinceRefused>
  /** [D94]: cumulative totals; the same key on a retry counts once */
  readonly counters: (entries: ReadonlyArray<CounterEntry>, idempotencyKey: string) => Effect.Effect<void, ApiUnavailable>
  /** [D54]: whether the API allows these OpenVPN credentials on this node */
  readonly openvpnAuth: (username: string, password: string) => Effect.Effect<boolean, ApiUnavailable>
  /** [D54], [D103]: the same, with the speed to shape the session to (null: none) */
  readonly openvpnAllow: (username: string, password: string) => Effect.Effect<OpenVpnAllowance, ApiUnavailable>
  /**
   * [D105], [D106], issue 34: an OpenVPN server's credentials as the push stream batches them
   * (the whole list, or what changed after `since`): the OpenVPN agent's poll
   */
  readonly credentials: (since: Option.Option<number>) => Effect.Effect<PeersBatch, ApiUnavailable | SinceRefused>
}

export class NodeClient extends Context.Tag("node/NodeClient")<NodeClient, NodeClientShape>() {
  static readonly layer = (config: NodeClientConfig) => Layer.effect(NodeClient, make(config))
}

const describe = (e: unknown): string => (typeof e === "object" && e !== null && "message" in e && typeof e.message === "string" ? e.message : String(e))

/** the body's `message` (our envelope) when there is one, for the log line */
const messageOf = (response: HttpClientResponse.HttpClientResponse) =>
  response.json.pipe(
    Effect.map((body) => (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string" ? `: ${body.message}` : "")),
    Effect.orElseSucceed(() => "")
  )

export const make = (config: NodeClientConfig) =>
  Effect.gen(function* () {
    const http = yield* HttpClient.HttpClient
    const base = config.apiUrl.replace(/\/+$/, "")
    const authorised = (request: HttpClientRequest.HttpClientRequest) =>
      request.pipe(HttpClientRequest.bearerToken(Redacted.value(config.token)), HttpClientRequest.acceptJson)

    const send = (request: HttpClientRequest.HttpClientRequest) =>
      http.execute(authorised(request)).pipe(
        Effect.timeoutFail({
          duration: REQUEST_TIMEOUT,
          onTimeout: () => new ApiUnavailable({ message: `${request.method} ${request.url}: no answer in 30 s` })
        }),
        Effect.catchTag("RequestError", "ResponseError", (e) =>
          Effect.fail(new ApiUnavailable({ message: `${request.method} ${request.url}: ${describe(e)}` }))
        )
      )

    const unexpected = (request: HttpClientRequest.HttpClientRequest, response: HttpClientResponse.HttpClientResponse) =>
      Effect.flatMap(messageOf(response), (message) =>
        Effect.fail(new ApiUnavailable({ message: `${request.method} ${request.url}: HTTP ${response.status}${message}` }))
      )

    const peers = (since: Option.Option<string>) =>
      Effect.gen(function* () {
        const request = HttpClientRequest.get(`${base}/v1/node/peers`).pipe(
          Option.isSome(since) ? HttpClientRequest.setUrlParam("since", since.value) : (r) => r
        )
        const response = yield* send(request)
        if (response.status === 422 && Option.isSome(since)) return yield* Effect.fail(new SinceRefused({ since: since.value }))
        if (response.status !== 200) return yield* unexpected(request, response)
        const body = yield* response.json.pipe(
          Effect.flatMap(Schema.decodeUnknown(PeerList)),
          Effect.mapError((e) => new ApiUnavailable({ message: `GET /v1/node/peers: unexpected answer: ${describe(e)}` }))
        )
        return {
          peers: body.data,
          revision: Option.fromNullable(body.meta?.revision),
          full: Option.isNone(since)
        }
      })

    const counters = (entries: ReadonlyArray<CounterEntry>, idempotencyKey: string) =>
      Effect.gen(function* () {
        const request = HttpClientRequest.post(`${base}/v1/node/counters`).pipe(
          HttpClientRequest.setHeader("idempotency-key", idempotencyKey),
          HttpClientRequest.bodyUnsafeJson(entries)
        )
        const response = yield* send(request)
        if (response.status !== 200) return yield* unexpected(request, response)
      })

    const openvpnAllow = (username: string, password: string) =>
      Effect.gen(function* () {
        const request = HttpClientRequest.post(`${base}/v1/node/openvpn/auth`).pipe(HttpClientRequest.bodyUnsafeJson({ username, password }))
        const response = yield* send(request)
        if (response.status === 200) {
          const body = yield* response.json.pipe(Effect.flatMap(Schema.decodeUnknown(AuthAnswer)), Effect.option)
          const speed = body._tag === "Some" ? (body.value.data.speed_limit_mbps ?? null) : null
          return { allowed: true, speedLimitMbps: speed } satisfies OpenVpnAllowance
        }
        // refused (403) or not a valid pair at all (422): not allowed
        if (response.status === 403 || response.status === 422) return { allowed: false, speedLimitMbps: null } satisfies OpenVpnAllowance
        return yield* unexpected(request, response)
      })
    const openvpnAuth = (username: string, password: string) => Effect.map(openvpnAllow(username, password), (a) => a.allowed)

    const credentials = (since: Option.Option<number>) =>
      Effect.gen(function* () {
        const request = HttpClientRequest.get(`${base}/v1/node/peers`).pipe(
          Option.isSome(since) ? HttpClientRequest.setUrlParam("since", String(since.value)) : (r) => r
        )
        const response = yield* send(request)
        if (response.status === 422 && Option.isSome(since)) return yield* Effect.fail(new SinceRefused({ since: String(since.value) }))
        if (response.status !== 200) return yield* unexpected(request, response)
        const body = yield* response.json.pipe(
          Effect.flatMap(Schema.decodeUnknown(CredentialList)),
          Effect.mapError((e) => new ApiUnavailable({ message: `GET /v1/node/peers: unexpected answer: ${describe(e)}` }))
        )
        const peers = body.data.flatMap((e): PeersBatch["peers"] => {
          const entry = Schema.decodeUnknownOption(CredentialEntry)(e)
          if (Option.isNone(entry)) return []
          const { enabled, removed, speed_limit_mbps, username } = entry.value
          return [removed === true ? { username, removed: true as const } : { username, enabled: enabled === true, speed_limit_mbps: speed_limit_mbps ?? null }]
        })
        return { revision: body.meta.revision, full: Option.isNone(since), peers, rotated: body.meta.rotated ?? [] } satisfies PeersBatch
      })

    return { peers, counters, openvpnAuth, openvpnAllow, credentials } satisfies NodeClientShape
  })
