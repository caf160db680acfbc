import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../../http/Describe.ts"
import { Ok } from "../../http/Envelope.ts"
import { errorEnvelope, InvalidSignatureResponse } from "../../http/Errors.ts"
import { InvoiceDetail, InvoiceNotPayable } from "../Domain.ts"

/** [D112]: an enabled gateway as a payer picks it */
export const PaymentGatewayItem = Schema.Struct({ name: Schema.String, display_name: Schema.String }).annotations({ identifier: "PaymentGateway" })

/** [D112]: what the Stripe webhook did with an event (`handled: false`: a type it leaves alone, or a replay) */
export const StripeWebhookResult = Schema.Struct({
  event_id: Schema.String,
  type: Schema.String,
  handled: Schema.Boolean,
  invoice: Schema.NullOr(InvoiceDetail)
}).annotations({ identifier: "StripeWebhookResult" })

/** [D123]: what a gateway's webhook did with an update: paid its invoice, credited the balance, or nothing (a replay, another kind) */
export const GatewayWebhookResult = Schema.Struct({
  event_id: Schema.NullOr(Schema.String),
  type: Schema.String,
  handled: Schema.Boolean,
  outcome: Schema.NullOr(Schema.Literal("paid", "credited", "duplicate")),
  invoice: Schema.NullOr(InvoiceDetail)
}).annotations({ identifier: "GatewayWebhookResult" })

/** The payment gateways a payer can choose ([D112]) and Stripe's webhook; no token on either. */
export class BillingGatewaysApi extends HttpApiGroup.make("billingGateways")
  .annotate(OpenApi.Description, "The payment gateways a payer can choose, and Stripe's webhook.")
  .add(
    HttpApiEndpoint.get("listPaymentGateways", "/payment-gateways")
      .annotateContext(
        describe(
          "List the payment gateways",
          "The gateways this deployment accepts (`manual` always, `stripe` and `cryptobot` when configured), as `{name, display_name}`. Pass a `name` as `gateway` when ordering. No token."
        )
      )
      .addSuccess(Ok(Schema.Array(PaymentGatewayItem), { identifier: "PaymentGatewayList" }))
  )
  .add(
    // the package checks `Stripe-Signature` over the raw body before anything is parsed
    HttpApiEndpoint.post("stripeWebhook", "/webhooks/payments/stripe")
      .annotateContext(
        describe(
          "Receive a Stripe event",
          "Called by Stripe, signed with `Stripe-Signature` (checked by the official package, 300 s tolerance; a bad one is 401 `Invalid signature.` and changes nothing). `checkout.session.completed` with `payment_status: paid` pays the invoice by the rules of [D123] (money that differs from the invoice, or for an invoice no longer pending, goes to the payer's balance); each event id is handled once; other types, and a signed event without `data`, are answered 200 and left alone."
        )
      )
      .addSuccess(Ok(StripeWebhookResult, { identifier: "StripeWebhookAccepted" }))
      .addError(InvalidSignatureResponse)
      .addError(errorEnvelope(InvoiceNotPayable))
  )
  .add(
    // [D123]: the signature covers the raw body; the handler checks it before anything is parsed
    HttpApiEndpoint.post("cryptobotWebhook", "/webhooks/payments/cryptobot")
      .annotateContext(
        describe(
          "Receive a CryptoBot update",
          "Called by Crypto Pay (@CryptoBot), signed with `crypto-pay-api-signature` (hex HMAC-SHA256 of the raw body keyed by SHA-256 of CRYPTOBOT_TOKEN; a bad one is 401 `Invalid signature.` and changes nothing). An `invoice_paid` update pays the invoice its `payload` names, once; an underpayment, another currency or an invoice no longer pending is credited to the payer's balance ([D123]); other update types are answered 200."
        )
      )
      .addSuccess(Ok(GatewayWebhookResult, { identifier: "CryptoBotWebhookAccepted" }))
      .addError(InvalidSignatureResponse)
  ) {}
