import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../../http/Describe.ts"
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
  .annotate(OpenApi.Description, "The payment gateways a payer can choose, and Stripe's webhook.")
  .add(
    HttpApiEndpoint.get("listPaymentGateways", "/payment-gateways")
      .annotateContext(describe("List the payment gateways", "The gateways this deployment accepts (`manual` always, `stripe` when configured), as `{name, display_name}`. Pass a `name` as `gateway` when ordering. No token."))
      .addSuccess(Ok(Schema.Array(PaymentGatewayItem), { identifier: "PaymentGatewayList" }))
  )
  .add(
    // the package checks `Stripe-Signature` over the raw body before anything is parsed
    HttpApiEndpoint.post("stripeWebhook", "/webhooks/payments/stripe")
      .annotateContext(describe("Receive a Stripe event", "Called by Stripe, signed with `Stripe-Signature` (checked by the official package, 300 s tolerance; a bad one is 401 `Invalid signature.` and changes nothing). `checkout.session.completed` with `payment_status: paid` pays the invoice by the rules of [D123] (money that differs from the invoice, or for an invoice no longer pending, goes to the payer's balance); each event id is handled once; other types, and a signed event without `data`, are answered 200 and left alone."))
      .addSuccess(Ok(StripeWebhookResult, { identifier: "StripeWebhookAccepted" }))
      .addError(InvalidSignatureResponse)
      .addError(errorEnvelope(InvoiceNotPayable))
  )
{}
