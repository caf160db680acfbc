import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { InvalidSignature, NotFound, ServiceUnavailable, ValidationError } from "../../platform/Errors.ts"
import type { Invoice, InvoiceNotPayable } from "../Domain.ts"

/** Where the payer goes to pay one invoice, and until when the link works. */
export interface PaymentLink {
  readonly url: string
  readonly expiresAt: Date
}

/** [D110]: what a gateway needs to pay part of an invoice back. */
export interface GatewayRefundRequest {
  readonly invoiceUuid: string
  /** the gateway's id of the payment (Stripe: the payment intent) */
  readonly transactionId: string | null
  /** a decimal of two places, at most what was paid through the gateway */
  readonly amount: string
  readonly currency: string
}

/** [D110]: the provider refused or failed the refund; nothing was recorded. */
export class GatewayRefundFailed extends Schema.TaggedError<GatewayRefundFailed>()(
  "GatewayRefundFailed",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "The payment gateway could not refund the payment." })
  },
  HttpApiSchema.annotations({ status: 502 })
) {}

/**
 * [D110]: the gateway has no payment of this invoice to pay back (a Stripe invoice an operator
 * marked paid by hand): the caller's `to: gateway` cannot be honoured, a 422 `errors.to`.
 */
export class RefundUnavailable extends Schema.TaggedError<RefundUnavailable>()("RefundUnavailable", {
  message: Schema.String
}) {}

/** A webhook delivery as it arrived: the raw bytes (what a signature covers) and the headers, lower-cased. */
export interface GatewayWebhook {
  readonly raw: string
  readonly headers: Readonly<Record<string, string | undefined>>
}

/**
 * [D123]: what a verified webhook says: "this invoice was paid this amount in this currency,
 * event id X", or "ignore" (an event of another kind). `amountCents` / `currency` null: the
 * provider did not say (a `manual` event of [D40] without them means the invoice's own).
 */
export type WebhookOutcome =
  | {
      readonly _tag: "Paid"
      readonly invoiceUuid: string
      readonly amountCents: number | null
      readonly currency: string | null
      /** the provider's id of this event (a replay carries the same one) */
      readonly eventId: string
      /** the provider's id of the payment: one payment is counted once, whatever event carries it */
      readonly transactionId: string
      /** what is kept with the payment (`payment_events.payload`) */
      readonly payload: unknown
    }
  | { readonly _tag: "Ignore"; readonly eventId: string | null; readonly type: string }

/**
 * One payment provider ([D37], [D123]): create a payment for an invoice, verify and parse its
 * webhook, refund where it can. Its webhook arrives at `/v1/webhooks/payments/{name}` ([D40]).
 * A new adapter is done when the conformance kit (test/billing/gateway-conformance/) passes.
 */
export interface PaymentGateway {
  readonly name: string
  /** [D112]: what `GET /v1/payment-gateways` shows a payer */
  readonly displayName: string
  /** [D123] "create a payment": where the payer pays the invoice (`{url, expires_at}`) */
  readonly paymentLink: (invoice: Invoice) => Effect.Effect<PaymentLink, InvoiceNotPayable | ServiceUnavailable>
  /**
   * [D123] "verify and parse a webhook": a bad signature is `InvalidSignature` (401, nothing
   * changed); a signed body that is no event of the provider's is a 422 (or 404 for an invoice
   * that cannot exist, [D40]). Absent: the gateway has no webhook (`balance`).
   */
  readonly parseWebhook?: (delivery: GatewayWebhook) => Effect.Effect<WebhookOutcome, InvalidSignature | ValidationError | NotFound>
  /**
   * [D110]: pays `amount` of a paid invoice back to the payer; the provider's refund id. Absent
   * when the provider cannot refund (`manual`): a refund `to: gateway` is then 422 `errors.to`.
   */
  readonly refund?: (payment: GatewayRefundRequest) => Effect.Effect<{ readonly refundId: string }, GatewayRefundFailed | RefundUnavailable>
  /**
   * [D123] (issue 34): closes the provider's payment pages of invoices that are no longer pending
   * (Stripe: expires their open Checkout Sessions), so that nobody pays a cancelled invoice there.
   * Best effort: what fails is tried again by the next call (the jobs run one each time); a payment
   * that gets through anyway goes to the payer's balance. Absent: nothing to close (`manual`).
   */
  readonly closeStale?: Effect.Effect<void>
}
