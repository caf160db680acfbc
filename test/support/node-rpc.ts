import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import type { RpcClientError } from "@effect/rpc/RpcClientError"
import { Effect, Fiber, Layer, Stream } from "effect"
import { NodeRpcs, type PeersBatch } from "../../src/vpn/NodeProtocol.ts"
import type { TestApp } from "./app.ts"

/**
 * A node agent's RPC client ([D105]), built from the same `RpcGroup` as the agent's, its
 * requests served in process by the test app's handler (HTTP protocol, NDJSON).
 */
export const rpcProtocol = (app: TestApp, token?: string) => {
  const viaHandler = Object.assign((input: RequestInfo | URL, init?: RequestInit) => app.fetch(new Request(input, init)), {
    preconnect: fetch.preconnect
  })
  return RpcClient.layerProtocolHttp({
    url: "http://localhost:3000/v1/node/rpc",
    // as the agent's client: a refusal before the RPC server (401, 422, 429) fails the call
    transformClient: <E, R>(client: HttpClient.HttpClient.With<E, R>) =>
      HttpClient.filterStatusOk(
        token === undefined ? client : client.pipe(HttpClient.mapRequest(HttpClientRequest.bearerToken(token)))
      ) as HttpClient.HttpClient.With<E, R>
  }).pipe(
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(Layer.succeed(FetchHttpClient.Fetch, viaHandler as typeof fetch)),
    Layer.provide(RpcSerialization.layerNdjson)
  )
}

/** one call of the group with a fresh client (`ReportApplied`) */
export const rpcCall = <A, E>(
  app: TestApp,
  token: string | undefined,
  call: (client: RpcClient.FromGroup<typeof NodeRpcs, RpcClientError>) => Effect.Effect<A, E>
) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const client = yield* RpcClient.make(NodeRpcs)
      return yield* call(client)
    }).pipe(Effect.scoped, Effect.provide(rpcProtocol(app, token)))
  )

export interface Watch {
  /** every batch received, with when it arrived (performance.now()) */
  readonly batches: Array<PeersBatch & { readonly at: number }>
  /** the stream's failure, once it failed */
  readonly failure: () => unknown
  /** resolves with the first batch that passes `test` (received before or later), or rejects after `ms` */
  readonly waitFor: (test: (batch: PeersBatch) => boolean, ms?: number) => Promise<PeersBatch & { readonly at: number }>
  readonly close: () => Promise<void>
}

/** `WatchPeers({since})` kept open in the background */
export const watch = (app: TestApp, token: string | undefined, since: number | null): Watch => {
  const batches: Array<PeersBatch & { readonly at: number }> = []
  let failure: unknown = undefined
  const fiber = Effect.runFork(
    Effect.gen(function* () {
      const client = yield* RpcClient.make(NodeRpcs)
      yield* client.WatchPeers({ since }).pipe(Stream.runForEach((batch) => Effect.sync(() => batches.push({ ...batch, at: performance.now() }))))
    }).pipe(
      Effect.scoped,
      Effect.provide(rpcProtocol(app, token)),
      Effect.catchAll((e) => Effect.sync(() => (failure = e)))
    )
  )
  const waitFor = async (test: (batch: PeersBatch) => boolean, ms = 3000) => {
    const until = performance.now() + ms
    for (;;) {
      const found = batches.find(test)
      if (found !== undefined) return found
      if (failure !== undefined) throw new Error(`the stream failed: ${String(failure)}`)
      if (performance.now() > until) throw new Error(`no such batch in ${ms} ms; got ${JSON.stringify(batches)}`)
      await Bun.sleep(10)
    }
  }
  return {
    batches,
    failure: () => failure,
    waitFor,
    close: () => Effect.runPromise(Fiber.interrupt(fiber)).then(() => undefined)
  }
}
