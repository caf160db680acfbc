/**
 * The framework's floor: a bare Effect `HttpApi` on `BunHttpServer` with `@effect/sql`, serving
 * only `/v1/status` and `/v1/plans` with response schemas, a query each per request, no middleware
 * of ours. The driver is ours (`Bun.SQL` through src/platform/BunSqlClient.ts), so the floor
 * measures the framework, not the driver; BARE_DRIVER=pg puts it on `@effect/sql-pg`. The default
 * tracer middleware is off (as in our server) unless BARE_TRACER=1.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpMiddleware } from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Schema } from "effect"
import * as BunSqlClient from "../../src/platform/BunSqlClient.ts"

const Status = Schema.Struct({
  success: Schema.Boolean,
  message: Schema.String,
  data: Schema.Struct({ database: Schema.Literal("ok") })
})
const Plan = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  description: Schema.String,
  bandwidth_limit_gb: Schema.Int,
  speed_limit_mbps: Schema.NullOr(Schema.Int),
  trial_days: Schema.Int
})
const Plans = Schema.Struct({ success: Schema.Boolean, data: Schema.Array(Plan) })

class Bare extends HttpApiGroup.make("bare")
  .add(HttpApiEndpoint.get("status", "/v1/status").addSuccess(Status))
  .add(HttpApiEndpoint.get("plans", "/v1/plans").addSuccess(Plans)) {}
class BareApi extends HttpApi.make("bare").add(Bare) {}

const BareLive = HttpApiBuilder.group(BareApi, "bare", (handlers) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("status", () => sql`select 1`.pipe(Effect.as({ success: true, message: "OK", data: { database: "ok" as const } }), Effect.orDie))
      .handle("plans", () =>
        sql<typeof Plan.Type>`
          select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days
          from plans where is_active order by id`.pipe(
          Effect.map((data) => ({ success: true, data })),
          Effect.orDie
        )
      )
  })
)

const tracer = process.env.BARE_TRACER === "1"
const serve = HttpApiBuilder.serve()
const ServerLive = (tracer ? serve : serve.pipe(HttpMiddleware.withTracerDisabledWhen(() => true))).pipe(
  Layer.provide(HttpApiBuilder.api(BareApi).pipe(Layer.provide(BareLive))),
  Layer.provide(
    process.env.BARE_DRIVER === "pg"
      ? PgClient.layer({ url: Redacted.make(process.env.DATABASE_URL!), maxConnections: 10 })
      : BunSqlClient.layer({ url: Redacted.make(process.env.DATABASE_URL!), maxConnections: 10, prepare: true })
  ),
  Layer.provide(BunHttpServer.layer({ port: Number(process.env.PORT ?? 3000), hostname: "127.0.0.1" }))
)

BunRuntime.runMain(Layer.launch(ServerLive))
