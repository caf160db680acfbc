/**
 * `bun run bench/pipeline.ts` (issue 27): what each layer the server wraps around the API costs
 * per request, in process (no socket, no database): a constant answer through `HttpApp.toWebHandler`,
 * then the same with the in-flight tracking, the route metrics, the request log (as shipped:
 * LOG_LEVEL=info, logfmt on stdout) and CORS added one at a time. Rounds are interleaved so the
 * machine's other load falls on every variant alike. Figures go to stderr (run it with
 * `>/dev/null` so the request log's writes cost what they cost in production, not a terminal).
 *
 * Knobs: PIPELINE_REQUESTS (20000 per variant and round), PIPELINE_ROUNDS (3).
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { InFlight, track } from "../src/http/Drain.ts"
import { requestLog } from "../src/http/RequestLog.ts"
import { requestMetrics } from "../src/http/RequestMetrics.ts"
import { makeServeMiddleware } from "../src/Server.ts"
import { appConfig } from "../src/platform/Config.ts"
import { AppClock } from "../src/platform/Clock.ts"
import { Metrics } from "../src/platform/Metrics.ts"

const REQUESTS = Number(process.env.PIPELINE_REQUESTS ?? 20_000)
const ROUNDS = Number(process.env.PIPELINE_ROUNDS ?? 3)

const configOf = (env: Record<string, string>) =>
  Effect.runSync(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries({ PUBLIC_URL: "http://bench.example", ...env })))))
const config = configOf({ LOG_LEVEL: "info" })
const corsConfig = configOf({ LOG_LEVEL: "info", CORS_ORIGINS: "https://app.example" })
const metrics = Effect.runSync(Effect.provide(Metrics, Metrics.Live.pipe(Layer.provide(AppClock.Live))))
const figures = metrics.route("/v1/status")
const figuresOf = () => figures

const constant: HttpApp.Default = Effect.succeed(HttpServerResponse.unsafeJson({ success: true, data: { status: "ok" } }))

const variants: ReadonlyArray<readonly [string, HttpApp.Default]> = [
  ["bare (a constant answer)", constant],
  ["+ in-flight tracking", track(new InFlight())(constant)],
  ["+ route metrics", requestMetrics(figuresOf)(constant)],
  ["+ request log (info, logfmt)", requestLog(config)(constant)],
  ["as shipped (tracking, metrics, log)", makeServeMiddleware({ inFlight: new InFlight(), config, figuresOf })(constant)],
  ["as shipped + CORS configured", makeServeMiddleware({ inFlight: new InFlight(), config: corsConfig, figuresOf })(constant)]
]

const logger = Logger.replace(Logger.defaultLogger, Logger.logfmtLogger)
const handlers = variants.map(([name, app]) => [name, HttpApp.toWebHandlerLayer(app, Layer.merge(logger, Logger.minimumLogLevel(LogLevel.Info)))] as const)

const results = new Map<string, Array<number>>()
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, built] of handlers) {
    const handler = built.handler
    for (let i = 0; i < 500; i++) await handler(new Request("http://127.0.0.1/v1/status"))
    const t = performance.now()
    for (let i = 0; i < REQUESTS; i++) {
      const res = await handler(new Request("http://127.0.0.1/v1/status", { headers: { origin: "https://app.example" } }))
      await res.arrayBuffer()
    }
    const us = ((performance.now() - t) * 1000) / REQUESTS
    results.set(name, [...(results.get(name) ?? []), us])
  }
}
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const bare = median(results.get(variants[0]![0])!)
console.error(`| layer | µs per request (median of ${ROUNDS} rounds of ${REQUESTS}) | over bare |`)
console.error(`|---|---|---|`)
for (const [name] of variants) {
  const m = median(results.get(name)!)
  console.error(`| ${name} | ${m.toFixed(2)} | +${(m - bare).toFixed(2)} |`)
}
for (const [, built] of handlers) await built.dispose()
