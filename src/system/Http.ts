import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../Api.ts"
import { Metrics } from "../platform/Metrics.ts"
import { STATUS_DOWN, STATUS_UP, StatusProbe } from "./Probe.ts"

const down = () => HttpServerResponse.unsafeJson(STATUS_DOWN, { status: 503, headers: { "retry-after": "5" } })

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function* () {
    const { databaseUp } = yield* StatusProbe
    const status = Effect.map(Effect.promise(databaseUp), (ok) => (ok ? STATUS_UP : down()))
    return handlers.handle("status", () => status)
  })
).pipe(Layer.provide(StatusProbe.Default))

/** The figures of [D102] as the registry renders them. */
export const MetricsLive = HttpApiBuilder.group(Api, "metrics", (handlers) =>
  Effect.map(Metrics, (metrics) => handlers.handle("metrics", () => metrics.exposition))
)
