import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { toCents } from "../catalog/Money.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { NotFound } from "../platform/Errors.ts"
import { decodeManualEvent, manualMoney, verifyManualSignature } from "./gateways/ManualWebhook.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { Payments } from "./Payments.ts"

/** The payment webhook of [D40], after the transport: the signature, the event, the payment. */
export class PaymentWebhooks extends Effect.Service<PaymentWebhooks>()("billing/PaymentWebhooks", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const clock = yield* AppClock
    const gateways = yield* PaymentGateways
    const invoices = yield* Invoices
    const payments = yield* Payments

    const verify = (raw: string, header: string | undefined) =>
      Effect.gen(function* () {
        // no secret configured: the webhook does not exist
        const secret = yield* Option.match(config.paymentWebhookSecret, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })
        yield* verifyManualSignature(Redacted.value(secret), yield* clock.now, raw, header)
      })

    // [D123]: the manual gateway's event, shared with its adapter (gateways/ManualWebhook.ts)
    const decode = decodeManualEvent

    /**
     * signed, well-formed, for an invoice of this gateway: the payment goes by [D123]'s rules
     * (paid once; money that differs from the invoice, or for an invoice no longer pending, to the
     * payer's balance), answered 200 with the invoice
     */
    const accept = (gateway: string, raw: string, signature: string | undefined) =>
      Effect.gen(function* () {
        yield* verify(raw, signature)
        if (Option.isNone(gateways.get(gateway))) return yield* Effect.fail(new NotFound())
        const { body, event } = yield* decode(raw)
        const invoice = yield* Effect.flatMap(
          invoices.byUuid(event.invoice_uuid.toLowerCase()),
          Option.match({
            onNone: () => Effect.fail(new NotFound()),
            onSome: Effect.succeed
          })
        )
        if (invoice.gateway !== gateway) return yield* Effect.fail(new NotFound())
        // [D123]: absent amount or currency: the invoice's own ([D40])
        const money = yield* manualMoney(event)
        yield* payments.receive(invoice.id, {
          gateway,
          transactionId: event.transaction_id,
          amountCents: money.amountCents ?? toCents(invoice.amount),
          currency: money.currency ?? invoice.currency,
          payload: body
        })
        // [D123]: an invoice no longer pending has no payment page left open
        yield* gateways.closeStale
        return yield* Effect.flatMap(
          Effect.flatMap(
            invoices.byId(invoice.id),
            Option.match({
              onNone: () => Effect.fail(new NotFound()),
              onSome: Effect.succeed
            })
          ),
          invoices.detail
        )
      })

    return { accept } as const
  }),
  dependencies: [Invoices.Default, Payments.Default, GatewaysLive]
}) {}
