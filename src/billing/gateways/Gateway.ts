import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ServiceUnavailable } from "../../platform/Errors.ts"
import type { Invoice, InvoiceNotPayable } from "../Domain.ts"

/** Where the payer goes to pay one invoice, and until when the link works. */
export interface PaymentLink {
  readonly url: string
  readonly expiresAt: Date
}

/** [D110]: what a gateway needs to pay part of an invoice back. */
export interface RefundRequest {
  readonly invoiceUuid: string
  /** the gateway's id of the payment (Stripe: the payment intent) */
  readonly transactionId: string | null
  /** a decimal of two places, at most what was paid through the gateway */
  readonly amount: string
  readonly currency: string
}

/** [D110]: the provider refused or failed the refund; nothing was recorded. */
export class GatewayRefundFailed extends Schema.TaggedError<GatewayRefundFailed>()("GatewayRefundFailed", {
  message: Schema.optionalWith(Schema.String, { default: () => "The payment gateway could not refund the payment." })
}, HttpApiSchema.annotations({ status: 502 })) {}

/**
 * [D110]: the gateway has no payment of this invoice to pay back (a Stripe invoice an operator
 * marked paid by hand): the caller's `to: gateway` cannot be honoured, a 422 `errors.to`.
 */
export class RefundUnavailable extends Schema.TaggedError<RefundUnavailable>()("RefundUnavailable", {
  message: Schema.String
}) {}

/** One payment provider ([D37]). Its webhook arrives at `/v1/webhooks/payments/{name}` ([D40]). */
export interface PaymentGateway {
  readonly name: string
  /** [D112]: what `GET /v1/payment-gateways` shows a payer */
  readonly displayName: string
  readonly paymentLink: (invoice: Invoice) => Effect.Effect<PaymentLink, InvoiceNotPayable | ServiceUnavailable>
  /**
   * [D110]: pays `amount` of a paid invoice back to the payer; the provider's refund id. Absent
   * when the provider cannot refund (`manual`): a refund `to: gateway` is then 422 `errors.to`.
   */
  readonly refund?: (payment: RefundRequest) => Effect.Effect<{ readonly refundId: string }, GatewayRefundFailed | RefundUnavailable>
  /**
   * [D123] (issue 34): closes the provider's payment pages of invoices that are no longer pending
   * (Stripe: expires their open Checkout Sessions), so that nobody pays a cancelled invoice there.
   * Best effort: what fails is tried again by the next call (the jobs run one each time); a payment
   * that gets through anyway goes to the payer's balance. Absent: nothing to close (`manual`).
   */
  readonly closeStale?: Effect.Effect<void>
}
