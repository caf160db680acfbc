import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { ServiceUnavailableResponse } from "../http/Errors.ts"

export const Health = Schema.Struct({ database: Schema.Literal("ok", "unavailable") }).annotations({ identifier: "Health" })

export const HealthResponse = Schema.Struct({
  success: Schema.Boolean,
  message: Schema.String,
  data: Health
}).annotations({ identifier: "HealthResponse" })

/** `GET /v1/status` ([D10]): 200 when the database answers, 503 when it does not. */
export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("status", "/status")
      .addSuccess(HealthResponse)
      .addError(ServiceUnavailableResponse)
  )
{}
