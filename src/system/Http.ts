import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import { Api } from "../Api.ts"

export const SystemLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ping = sql`select 1`.pipe(Effect.timeout(Duration.seconds(3)), Effect.isSuccess)
    return handlers.handle("status", () =>
      Effect.map(ping, (up) =>
        up
          ? { success: true, message: "OK", data: { database: "ok" as const } }
          : HttpServerResponse.unsafeJson(
            { success: false, message: "Service temporarily unavailable.", data: { database: "unavailable" } },
            { status: 503, headers: { "retry-after": "5" } }
          )))
  }))
