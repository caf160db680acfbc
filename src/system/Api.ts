import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { ServiceUnavailableResponse } from "../http/Errors.ts"
import { MetricsAccess } from "../http/Middleware.ts"

/** prom-client's `PROMETHEUS_CONTENT_TYPE`, written out: the contract loads no server module (issue 34) */
const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

export const Health = Schema.Struct({ database: Schema.Literal("ok", "unavailable") }).annotations({ identifier: "Health" })

export const HealthResponse = Schema.Struct({
  success: Schema.Boolean,
  message: Schema.String,
  data: Health
}).annotations({ identifier: "HealthResponse" })

/** `GET /v1/status` ([D10]): 200 when the database answers, 503 when it does not. */
export class SystemApi extends HttpApiGroup.make("system")
  .annotate(OpenApi.Description, "Health of the service.")
  .add(
    HttpApiEndpoint.get("status", "/status")
      .annotateContext(
        describe(
          "Check the service's health",
          'Answers 200 with `data.database: "ok"` while the server can reach its database, else 503 with `Retry-After`. No credential; use it for load-balancer and container health checks.'
        )
      )
      .addSuccess(HealthResponse)
      .addError(ServiceUnavailableResponse)
  ) {}

/**
 * `GET /metrics` ([D102]), outside `/v1`: the Prometheus text format for the operator's
 * scraper, not part of the clients' contract (left out of the OpenAPI document).
 */
export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(HttpApiEndpoint.get("metrics", "/metrics").addSuccess(HttpApiSchema.Text({ contentType: METRICS_CONTENT_TYPE })))
  .middleware(MetricsAccess)
  .annotate(OpenApi.Exclude, true) {}
