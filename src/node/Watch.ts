import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as RpcClient from "@effect/rpc/RpcClient"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { NODE_RPC_PATH, NodeRpcs, type PeersBatch } from "../vpn/NodeProtocol.ts"

/**
 * [D105]: the node agent's live subscription. It keeps `WatchPeers` open over HTTP (NDJSON),
 * applies each batch as it comes, reports the revision it applied (and every 30 s as a
 * heartbeat), and reconnects with backoff (200 ms doubling, at most 5 s), resuming from the last
 * revision it applied: nothing missed, nothing applied twice. While it is up the agent polls every
 * `NODE_POLL_SECONDS` (default 60) as a safety net; while it is down, every 10 s.
 */

/** the poll's interval while the stream is down ([D105]) */
export const DOWN_POLL_SECONDS = 10
const HEARTBEAT = "30 seconds"

/** The agent's RPC client of the API's node protocol (built from the API's own `RpcGroup`). */
export class PushClient extends Context.Tag("node/PushClient")<PushClient, RpcClient.FromGroup<typeof NodeRpcs, RpcClientError>>() {
  static readonly layer = (config: { readonly apiUrl: string; readonly token: Redacted.Redacted<string> }) =>
    Layer.scoped(PushClient, RpcClient.make(NodeRpcs)).pipe(
      Layer.provide(
        RpcClient.layerProtocolHttp({
          url: `${config.apiUrl.replace(/\/+$/, "")}${NODE_RPC_PATH}`,
          // issue 34: the API refuses a request before the RPC server sees it (401, 413, 422, 429):
          // a failure the stream retries, not a response without calls that leaves it waiting
          // (the protocol maps every error of its HTTP client to an `RpcClientError`, this one too)
          transformClient: <E, R>(client: HttpClient.HttpClient.With<E, R>) =>
            client.pipe(
              HttpClient.mapRequest(HttpClientRequest.bearerToken(Redacted.value(config.token))),
              HttpClient.filterStatusOk
            ) as HttpClient.HttpClient.With<E, R>
        })
      ),
      Layer.provide(RpcSerialization.layerNdjson)
    )
}

/** The stream ended without an error (the server went away gracefully): reconnect all the same. */
class StreamClosed extends Data.TaggedError("StreamClosed")<{ readonly reason: string }> {}
/** A batch could not be applied (`wg` failed): reconnect, with the full list. */
class ApplyFailed extends Data.TaggedError("ApplyFailed")<{ readonly message: string }> {}

export interface Push {
  /** whether the stream is up now */
  readonly connected: Effect.Effect<boolean>
  /** how long the poll waits now: `pollSeconds` with the stream up, else at most 10 s */
  readonly pollSeconds: Effect.Effect<number>
}

/**
 * Starts the subscription in the caller's scope when the agent has a `PushClient` (else the agent
 * only polls, at most every 10 s). `apply` applies one batch (under the agent's lock);
 * `resumeFrom` is the revision the agent holds (none: ask for the full list).
 */
export const startPush = (options: {
  readonly pollSeconds: number
  readonly version: string
  readonly apply: (batch: PeersBatch) => Effect.Effect<void, string>
  readonly resumeFrom: Effect.Effect<Option.Option<number>>
}) =>
  Effect.gen(function* () {
    const down = Math.min(options.pollSeconds, DOWN_POLL_SECONDS)
    const found = yield* Effect.serviceOption(PushClient)
    if (Option.isNone(found)) {
      return { connected: Effect.succeed(false), pollSeconds: Effect.succeed(down) } satisfies Push
    }
    const client = found.value
    let connected = false
    let applied = Option.none<number>()

    const report = (revision: number) =>
      client
        .ReportApplied({ revision, version: options.version })
        .pipe(Effect.catchAllCause((cause) => Effect.logDebug("node agent: applied revision not reported", cause)))

    const watch = Stream.unwrap(
      Effect.map(options.resumeFrom, (since) => {
        return client.WatchPeers({ since: Option.getOrNull(since) })
      })
    ).pipe(
      Stream.mapEffect((batch) =>
        options.apply(batch).pipe(
          Effect.mapError((message) => new ApplyFailed({ message })),
          Effect.zipRight(
            Effect.suspend(() => {
              const was = connected
              connected = true
              applied = Option.some(batch.revision)
              return was ? Effect.void : Effect.logInfo("node agent: push stream up")
            })
          ),
          Effect.zipRight(report(batch.revision))
        )
      ),
      Stream.concat(Stream.fail(new StreamClosed({ reason: "the API ended the stream" }))),
      // a graceful shutdown of the API ends the stream with an interruption, which a retry never sees
      Stream.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Stream.fail(new StreamClosed({ reason: "the API shut down" })) : Stream.failCause(cause)
      ),
      Stream.tapError((e) =>
        Effect.suspend(() => {
          const was = connected
          connected = false
          const text = "message" in e && typeof e.message === "string" ? e.message : e._tag
          return (was ? Effect.logWarning : Effect.logDebug)(`node agent: push stream down (${text}); polling every ${down} s, reconnecting`)
        })
      ),
      Stream.retry(Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("5 seconds"))))
    )
    yield* Effect.forkScoped(Stream.runDrain(watch))
    // the heartbeat: the admin routes show an agent not heard from for 90 s as not connected
    yield* Effect.suspend(() => (connected && Option.isSome(applied) ? report(applied.value) : Effect.void)).pipe(
      Effect.schedule(Schedule.spaced(HEARTBEAT)),
      Effect.forkScoped
    )
    return {
      connected: Effect.sync(() => connected),
      pollSeconds: Effect.sync(() => (connected ? options.pollSeconds : down))
    } satisfies Push
  })
