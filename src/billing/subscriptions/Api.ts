import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { requiredQueryParameters } from "../../http/OpenApiContract.ts"
import { Ok } from "../../http/Envelope.ts"
import { BusinessRuleViolationResponse } from "../../http/Errors.ts"
import { Body, IdParam, integer, oneOf } from "../../platform/Fields.ts"
import { OrderPayload } from "../Api.ts"
import { InvoiceDetail } from "../Domain.ts"
import { ServiceDetail } from "../../services/Api.ts"

const ServicePath = Schema.Struct({ service: IdParam })

export const ChangeQuoteResponse = Schema.Struct({
  kind: Schema.Literal("upgrade", "downgrade"),
  credit: Schema.String,
  amount_due: Schema.String,
  currency: Schema.String,
  effective_at: Schema.NullOr(Schema.Date)
}).annotations({ identifier: "ChangeQuote" })

/** a query id: an integer ([D12] names the field when it is missing or not one) */
const idParam = (field: string) =>
  Schema.String.pipe(
    Schema.filter((s) => /^-?[0-9]{1,15}$/.test(s.trim()), { message: () => `The ${field.replace("_", " ")} field must be an integer.` }),
    Schema.transform(Schema.Number, { strict: true, decode: Number, encode: String })
  ).annotations({ jsonSchema: { type: "integer", examples: [2] } })

const ANY_INT = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }

export const ChangePayload = Body({
  plan_id: integer("plan_id", ANY_INT),
  cycle_id: integer("cycle_id", ANY_INT),
  /** [D112]: as on orders; absent: DEFAULT_GATEWAY, else `manual` */
  gateway: OrderPayload.fields.gateway,
  /** [D124]: as on orders */
  save_card: OrderPayload.fields.save_card
})

/** [D111] cancel and resume; [D108] plan changes: the caller's own service and what it costs. */
export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.post("cancelService", "/services/:service/cancel")
      .setPath(ServicePath)
      .setPayload(Body({ at: oneOf("at", ["period_end", "now"] as const) }))
      .addSuccess(Ok(ServiceDetail, { identifier: "ServiceCancelled" }))
      .addError(BusinessRuleViolationResponse)
      .annotateContext(
        describe(
          "Cancel a service",
          "`at: period_end`: the service stops renewing and ends at `expires_at` (`auto_renew: false`, `cancel_at` = `expires_at`); `at: now`: the service " +
            "is `cancelled` and its VPN access stops at once. Pending invoices of the service are cancelled (their balance given back). No money is refunded."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("resumeService", "/services/:service/resume")
      .setPath(ServicePath)
      .addSuccess(Ok(ServiceDetail, { identifier: "ServiceResumed" }))
      .addError(BusinessRuleViolationResponse)
      .annotateContext(
        describe(
          "Resume a service",
          "Undoes a `period_end` cancel before it takes effect (`auto_renew` back on, `cancel_at` null). Otherwise 422 `Service cannot be resumed.`."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("changeQuote", "/services/:service/change-quote")
      .setPath(ServicePath)
      // both required; checked after the service is found (another user's service is 404 first)
      .setUrlParams(Schema.Struct({ plan_id: Schema.optional(idParam("plan_id")), cycle_id: Schema.optional(idParam("cycle_id")) }))
      // issue 34: required in the document (a request without them is 422)
      .annotate(OpenApi.Transform, requiredQueryParameters("plan_id", "cycle_id"))
      .addSuccess(Ok(ChangeQuoteResponse, { identifier: "ChangeQuoteResponse" }))
      .addError(BusinessRuleViolationResponse)
      .annotateContext(
        describe(
          "Quote a plan change",
          "What moving the caller's active service to `plan_id` and `cycle_id` costs: `kind` (`upgrade` when the new cycle's price per day is higher), " +
            "`credit` (the unused part of what was paid for the current period; 0.00 for a downgrade), `amount_due` and `effective_at` " +
            "(null for an upgrade until paid; `expires_at` for a downgrade)."
        )
      )
  )
  .add(
    HttpApiEndpoint.post("changePlan", "/services/:service/change")
      .setPath(ServicePath)
      .setPayload(ChangePayload)
      .addSuccess(Ok(InvoiceDetail, { identifier: "PlanChangeInvoice", status: 201 }))
      .addSuccess(Ok(ServiceDetail, { identifier: "PlanChangeScheduled" }))
      .addError(BusinessRuleViolationResponse)
      .annotateContext(
        describe(
          "Change a service's plan",
          "An upgrade answers 201 with its pending invoice (the new cycle's price less the credit; a 0.00 one is paid at once and takes effect at once; " +
            "a credit above the price goes to the balance). A downgrade answers 200 with the service and its `scheduled_change`, taking effect at " +
            "`expires_at` through the renewal invoice. A second change cancels a pending change invoice. A service that is not active: 422 `Service cannot be changed.`."
        )
      )
  )
  .add(
    HttpApiEndpoint.del("removeChange", "/services/:service/change")
      .setPath(ServicePath)
      .addSuccess(Ok(ServiceDetail, { identifier: "PlanChangeRemoved" }))
      .annotateContext(
        describe(
          "Remove a scheduled plan change",
          "Removes the downgrade scheduled on the service (and cancels a pending change invoice); answers the service."
        )
      )
  )
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Description, "Cancelling, resuming and changing the plan of the caller's services.") {}
