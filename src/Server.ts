import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as BunHttpServer from "@effect/platform-bun/BunHttpServer"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "./Api.ts"
import { ApiLive, DomainLive } from "./App.ts"
import { DRAIN_MAX_BYTES } from "./http/BodyLimit.ts"
import { InFlight } from "./http/Drain.ts"
import { routeMatcher } from "./http/RouteTemplates.ts"
import { makeServeMiddleware } from "./http/ServeMiddleware.ts"
import { AppConfig } from "./platform/Config.ts"
import { NodeRpcLive } from "./vpn/NodeRpc.ts"
import { Metrics, UNMATCHED_ROUTE } from "./platform/Metrics.ts"

/** The API with its documents (`/v1/openapi.json`, `/docs`) over the product's services (`domain`: tests swap ports). */
export const makeApiWithDocs = (domain: typeof DomainLive) =>
  Layer.mergeAll(
    HttpApiSwagger.layer({ path: "/docs" }),
    HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" }),
    // [D105]: the node protocol (`/v1/node/rpc`) on the same router and port
    NodeRpcLive
  ).pipe(Layer.provideMerge(ApiLive), Layer.provide(domain))

export const ApiWithDocs = makeApiWithDocs(DomainLive)

/** The routes served beside the API's endpoints (the documents). */
const OTHER_ROUTES = ["/docs", "/v1/openapi.json", "/v1/node/rpc"]

/** The middleware around the whole app, built once per server. */
export const serveMiddleware = Effect.gen(function*() {
  const config = yield* AppConfig
  const metrics = yield* Metrics
  const inFlight = new InFlight()
  metrics.countInFlight(() => inFlight.count)
  const routeFigures = routeMatcher(Api, OTHER_ROUTES, metrics.route)
  const unmatched = metrics.route(UNMATCHED_ROUTE)
  const figuresOf = (url: string) => routeFigures(url) ?? unmatched
  return { inFlight, middleware: makeServeMiddleware({ inFlight, config, figuresOf }) }
})

/** Waits up to 10 s for requests in flight when the server is shut down ([D5]). */
const drain = (inFlight: InFlight) =>
  Layer.scopedDiscard(Effect.addFinalizer(() =>
    Effect.promise(() => inFlight.drained()).pipe(Effect.timeout(Duration.seconds(10)), Effect.ignore)
  ))

/** The Bun server on `HOST:PORT`, tracing off (it read the client address on every request). */
export const HttpServerLive = Layer.unwrapScoped(Effect.gen(function*() {
  const config = yield* AppConfig
  const { inFlight, middleware } = yield* serveMiddleware
  return drain(inFlight).pipe(
    Layer.provideMerge(HttpApiBuilder.serve(middleware).pipe(HttpMiddleware.withTracerDisabledWhen(() => true))),
    Layer.provide(ApiWithDocs),
    Layer.provide(BunHttpServer.layer({
      port: config.port,
      hostname: config.host,
      // an oversized body is read to its end before the 413 ([D11], issue 19); never kept past 1 MiB
      maxRequestBodySize: DRAIN_MAX_BYTES
    }))
  )
}))
