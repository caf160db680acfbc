import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { Api } from "../Api.ts"
import { Metrics } from "../platform/Metrics.ts"
import { makeProbe } from "./Probe.ts"

const up = { success: true, message: "OK", data: { database: "ok" as const } }
const down = () =>
  HttpServerResponse.unsafeJson(
    { success: false, message: "Service temporarily unavailable.", data: { database: "unavailable" } },
    { status: 503, headers: { "retry-after": "5" } }
  )

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const probe = makeProbe(yield* Effect.runtime<never>(), sql`select 1`, 3_000)
    const status = Effect.map(Effect.promise(probe), (ok) => ok ? up : down())
    return handlers.handle("status", () => status)
  }))

/** The figures of [D102] as the registry renders them. */
export const MetricsLive = HttpApiBuilder.group(Api, "metrics", (handlers) =>
  Effect.map(Metrics, (metrics) => handlers.handle("metrics", () => metrics.exposition)))
