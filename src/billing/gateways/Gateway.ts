import * as Data from "effect/Data"
import type * as Effect from "effect/Effect"
import type { ServiceUnavailable } from "../../platform/Errors.ts"
import type { Invoice, InvoiceNotPayable } from "../Domain.ts"

/** Where the payer goes to pay one invoice, and until when the link works. */
export interface PaymentLink {
  readonly url: string
  readonly expiresAt: Date
}

/** [D110]: what a gateway's refund asks for; `reference` keeps a retried refund from paying twice */
export interface GatewayRefundRequest {
  readonly invoice: Invoice
  /** a decimal of two places, at most what was paid through the gateway */
  readonly amount: string
  readonly reference: string
}

export interface GatewayRefund {
  readonly id: string
  readonly status: string
}

/** [D110]: the invoice's gateway cannot pay money back (`manual`, `balance`): 422 `errors.to` for the caller */
export class GatewayRefundUnsupported extends Data.TaggedError("GatewayRefundUnsupported")<{ readonly gateway: string }> {}

/** One payment provider ([D37]). Its webhook arrives at `/v1/webhooks/payments/{name}` ([D40]). */
export interface PaymentGateway {
  readonly name: string
  /** [D112]: what `GET /v1/payment-gateways` shows a payer */
  readonly displayName: string
  readonly paymentLink: (invoice: Invoice) => Effect.Effect<PaymentLink, InvoiceNotPayable | ServiceUnavailable>
  readonly refund: (request: GatewayRefundRequest) => Effect.Effect<GatewayRefund, GatewayRefundUnsupported | ServiceUnavailable>
}

