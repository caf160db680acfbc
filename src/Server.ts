import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as BunHttpServer from "@effect/platform-bun/BunHttpServer"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "./Api.ts"
import { ApiLive, DomainLive } from "./App.ts"
import { AdminWritesLive } from "./audit/Http.ts"
import { adminWritesAudit } from "./http/AdminWrites.ts"
import { BearerTokens } from "./http/Auth.ts"
import { bodyLimit, DRAIN_MAX_BYTES } from "./http/BodyLimit.ts"
import { withRequestOrigin } from "./http/ClientAddress.ts"
import { catalogCaching } from "./http/Caching.ts"
import { deadline } from "./http/Deadline.ts"
import { docsHeaders } from "./http/DocsHeaders.ts"
import { InFlight, track } from "./http/Drain.ts"
import { errorMapping } from "./http/ErrorMapping.ts"
import { generalLimit, GeneralLimiter } from "./http/GeneralLimit.ts"
import { jsonBody } from "./http/JsonBody.ts"
import { portalPages } from "./http/Portal.ts"
import { DOCS_PATH, LazyDocsLive, OPENAPI_PATH } from "./http/LazyDocs.ts"
import { requestLog } from "./http/RequestLog.ts"
import { requestMetrics } from "./http/RequestMetrics.ts"
import { routeMatcher } from "./http/RouteTemplates.ts"
import { AppConfig } from "./platform/Config.ts"
import { Metrics, type RouteFigures, UNMATCHED_ROUTE } from "./platform/Metrics.ts"
import { NodeRpcLive } from "./vpn/NodeRpc.ts"

/*
 * THE REQUEST PIPELINE, outermost first: every layer a request passes on its way to a handler.
 *
 *  around the whole app (the server's middleware, `serveMiddleware` below)
 *   1. track          counted in flight, so a shutdown drains it ([D5])
 *   2. requestMetrics its route template's count and latency ([D102])
 *   3. requestLog     one log line, the request id ([D11])
 *   4. cors           when `CORS_ORIGINS` is set
 *   5. docsHeaders    the documents' own headers (`/docs`, `/v1/openapi.json`)
 *   6. catalogCaching ETag, `Cache-Control` and 304 for the public catalogue's reads (issue 40)
 *  inside the API (`HttpApiBuilder.middleware`: their answers pass the API's pre-response handlers)
 *   7. errorMapping   the framework's failures in the envelope (decode 422, 404/405, database 503/500)
 *   8. apiGuards      a deadline (no answer after 9 s: 503 with Retry-After, [D126]), the
 *                     request's origin ([D99], [D100]), the 413 ([D11]), the general limit
 *                     ([D30]), the one JSON body every decoder reads
 *   9. adminWrites    every admin write that succeeded, audited ([D100])
 *  per endpoint (`HttpApiMiddleware` tags on the groups, `App.ts`)
 *   10. Authentication / AdminAuthentication / PeopleOnly, the rate limits of `http/RateLimit.ts`,
 *      the metrics token; then the payload's schema, then the handler.
 * 7-9 are layers built together (their order among themselves is the framework's, as before).
 *
 * Every route of the API goes through this one pipeline (issue 40: the fast lane beside it is
 * gone); the catalogue's reads are cheap for clients through HTTP caching (`catalogCaching`).
 */

/** The routes served beside the API's endpoints (the documents, the node protocol). */
const OTHER_ROUTES = [DOCS_PATH, OPENAPI_PATH, "/v1/node/rpc"]

/** Applies `layers` to `app`, the first outermost. */
const pipeline = (layers: ReadonlyArray<(app: HttpApp.Default) => HttpApp.Default>) => (app: HttpApp.Default) =>
  layers.reduceRight((inner, layer) => layer(inner), app)

const corsOf = (config: AppConfig["Type"]) =>
  config.corsOrigins.length === 0
    ? (app: HttpApp.Default) => app
    : HttpMiddleware.cors({
        allowedOrigins: config.corsOrigins.includes("*") ? [] : (origin: string) => config.corsOrigins.includes(origin),
        allowedHeaders: ["authorization", "content-type", "x-request-id", "x-signature", "x-csrf-token", "x-session"],
        exposedHeaders: ["x-ratelimit-limit", "x-ratelimit-remaining", "retry-after", "content-disposition", "x-request-id", "etag"],
        maxAge: 600
      })

/** Layers 1-6, outermost first. */
export const makeServeMiddleware = (options: {
  readonly inFlight: InFlight
  readonly config: AppConfig["Type"]
  /** the metrics of a request's route template ([D102]) */
  readonly figuresOf: (url: string) => RouteFigures
}) => pipeline([track(options.inFlight), requestMetrics(options.figuresOf), requestLog(options.config), corsOf(options.config), docsHeaders, catalogCaching])

/** The middleware around the whole app, built once per server. */
export const serveMiddleware = Effect.gen(function* () {
  const config = yield* AppConfig
  const metrics = yield* Metrics
  const inFlight = new InFlight()
  metrics.countInFlight(() => inFlight.count)
  const routeFigures = routeMatcher(Api, OTHER_ROUTES, metrics.route)
  const unmatched = metrics.route(UNMATCHED_ROUTE)
  const figuresOf = (url: string) => routeFigures(url) ?? unmatched
  return { inFlight, figuresOf, middleware: makeServeMiddleware({ inFlight, config, figuresOf }) }
})

/** Layer 8: the API's guards, outermost first. */
const ApiGuardsLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const tokens = yield* BearerTokens
    const metrics = yield* Metrics
    const { limiter: generalLimiter } = yield* GeneralLimiter
    return HttpApiBuilder.middleware(
      pipeline([deadline(), withRequestOrigin(config), bodyLimit, generalLimit(generalLimiter, config, tokens, metrics), jsonBody])
    )
  })
).pipe(Layer.provide(GeneralLimiter.Default))

/** The API with its documents (`/v1/openapi.json`, `/docs`) over the product's services (`domain`: tests swap ports). */
export const makeApiWithDocs = (domain: typeof DomainLive) =>
  Layer.mergeAll(
    // `/docs` and `/v1/openapi.json`, made at their first request
    LazyDocsLive,
    // [D105]: the node protocol (`/v1/node/rpc`) on the same router and port
    NodeRpcLive
  ).pipe(
    Layer.provideMerge(
      ApiLive.pipe(
        // layers 7-9
        Layer.provide([errorMapping(Api), ApiGuardsLive, adminWritesAudit(Api).pipe(Layer.provide(AdminWritesLive))])
      )
    ),
    Layer.provide(domain)
  )

export const ApiWithDocs = makeApiWithDocs(DomainLive)

/** Waits up to 10 s for requests in flight when the server is shut down ([D5]). */
const drain = (inFlight: InFlight) =>
  Layer.scopedDiscard(Effect.addFinalizer(() => Effect.promise(() => inFlight.drained()).pipe(Effect.timeout(Duration.seconds(10)), Effect.ignore)))

/** The Bun server on `HOST:PORT`. */
const bunServer = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    BunHttpServer.layer({
      port: config.port,
      hostname: config.host,
      // an oversized body is read to its end before the 413 ([D11], issue 19); never kept past 1 MiB
      maxRequestBodySize: DRAIN_MAX_BYTES
    })
  )
)

/** The Bun server on `HOST:PORT`, tracing off (it read the client address on every request). */
export const HttpServerLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const { inFlight, middleware } = yield* serveMiddleware
    // [D118]: the portal and the console, innermost (counted, logged); `PORTAL=false`: the API only
    const portal = (yield* AppConfig).portal === true
    return drain(inFlight).pipe(
      Layer.provideMerge(
        HttpApiBuilder.serve(portal ? (app) => middleware(portalPages(app)) : middleware).pipe(HttpMiddleware.withTracerDisabledWhen(() => true))
      ),
      Layer.provide(ApiWithDocs),
      // the bound server is an output: the start-up line waits for it (issue 34)
      Layer.provideMerge(bunServer)
    )
  })
)
