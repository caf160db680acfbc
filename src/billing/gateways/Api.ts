import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { Ok } from "../../http/Envelope.ts"
import { errorEnvelope, InvalidSignatureResponse } from "../../http/Errors.ts"
import { InvoiceDetail, InvoiceNotPayable } from "../Domain.ts"

/** [D112]: an enabled gateway as a payer picks it */
export const PaymentGatewayItem = Schema.Struct({ name: Schema.String, display_name: Schema.String })
  .annotations({ identifier: "PaymentGateway" })

/** [D112]: what the Stripe webhook did with an event (`handled: false`: a type it leaves alone, or a replay) */
export const StripeWebhookResult = Schema.Struct({
  event_id: Schema.String,
  type: Schema.String,
  handled: Schema.Boolean,
  invoice: Schema.NullOr(InvoiceDetail)
}).annotations({ identifier: "StripeWebhookResult" })

/** The payment gateways a payer can choose ([D112]) and Stripe's webhook; no token on either. */
export class BillingGatewaysApi extends HttpApiGroup.make("billingGateways")
  .add(
    HttpApiEndpoint.get("listPaymentGateways", "/payment-gateways")
      .addSuccess(Ok(Schema.Array(PaymentGatewayItem), { identifier: "PaymentGatewayList" }))
  )
  .add(
    // the package checks `Stripe-Signature` over the raw body before anything is parsed
    HttpApiEndpoint.post("stripeWebhook", "/webhooks/payments/stripe")
      .addSuccess(Ok(StripeWebhookResult, { identifier: "StripeWebhookAccepted" }))
      .addError(InvalidSignatureResponse)
      .addError(errorEnvelope(InvoiceNotPayable))
  )
{}
