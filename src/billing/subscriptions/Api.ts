import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../../http/Auth.ts"
import { describe } from "../../http/Describe.ts"
import { Ok } from "../../http/Envelope.ts"
import { BusinessRuleViolationResponse } from "../../http/Errors.ts"
import { Body, IdParam, oneOf } from "../../platform/Fields.ts"
import { ServiceDetail } from "../../services/Api.ts"

const ServicePath = Schema.Struct({ service: IdParam })

/** [D111] cancel and resume; [D108] plan changes: the caller's own service and what it costs. */
export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(HttpApiEndpoint.post("cancelService", "/services/:service/cancel")
    .setPath(ServicePath)
    .setPayload(Body({ at: oneOf("at", ["period_end", "now"] as const) }))
    .addSuccess(Ok(ServiceDetail, { identifier: "ServiceCancelled" }))
    .addError(BusinessRuleViolationResponse)
    .annotateContext(describe(
      "Cancel a service",
      "`at: period_end`: the service stops renewing and ends at `expires_at` (`auto_renew: false`, `cancel_at` = `expires_at`); `at: now`: the service " +
        "is `cancelled` and its VPN access stops at once. Pending invoices of the service are cancelled (their balance given back). No money is refunded."
    )))
  .add(HttpApiEndpoint.post("resumeService", "/services/:service/resume")
    .setPath(ServicePath)
    .addSuccess(Ok(ServiceDetail, { identifier: "ServiceResumed" }))
    .addError(BusinessRuleViolationResponse)
    .annotateContext(describe(
      "Resume a service",
      "Undoes a `period_end` cancel before it takes effect (`auto_renew` back on, `cancel_at` null). Otherwise 422 `Service cannot be resumed.`."
    )))
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Description, "Cancelling, resuming and changing the plan of the caller's services.")
{}
