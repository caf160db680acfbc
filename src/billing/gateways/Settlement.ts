import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { toCents } from "../../catalog/Money.ts"
import { NotFound } from "../../platform/Errors.ts"
import { GatewaysLive, PaymentGateways } from "../Gateways.ts"
import { Invoices } from "../Invoices.ts"
import { Payments, type ReceiptOutcome } from "../Payments.ts"
import type { WebhookOutcome } from "./Gateway.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** what a settled payment did: paid its invoice, went to the balance, or was a replay that changed nothing */
export type SettleOutcome = ReceiptOutcome

type Paid = Extract<WebhookOutcome, { readonly _tag: "Paid" }>

/**
 * [D123]: a payment an adapter parsed from its webhook, applied to its invoice. The money rules
 * are `Payments.receive`'s, the same for every gateway; this only finds the invoice (one of this
 * gateway's, else 404, [D40]), fills in the invoice's amount and currency where the provider did
 * not say them, and closes payment pages left open for invoices no longer pending.
 */
export class GatewaySettlement extends Effect.Service<GatewaySettlement>()("billing/GatewaySettlement", {
  effect: Effect.gen(function* () {
    const invoices = yield* Invoices
    const payments = yield* Payments
    const gateways = yield* PaymentGateways

    const settle = (gateway: string, paid: Paid) =>
      Effect.gen(function* () {
        if (!UUID.test(paid.invoiceUuid)) return yield* Effect.fail(new NotFound())
        const found = yield* invoices.byUuid(paid.invoiceUuid)
        // [D40] (rev. 2): the invoice must be one of this gateway's
        if (Option.isNone(found) || found.value.gateway !== gateway) return yield* Effect.fail(new NotFound())
        const invoice = found.value
        const outcome = yield* payments
          .receive(invoice.id, {
            gateway,
            transactionId: paid.transactionId,
            amountCents: paid.amountCents ?? toCents(invoice.amount),
            currency: paid.currency ?? invoice.currency,
            payload: paid.payload
          })
          .pipe(Effect.catchTag("InvoiceNotPayable", () => Effect.fail(new NotFound())))
        // [D123]: an invoice no longer pending has no payment page left open
        if (outcome !== "duplicate") yield* gateways.closeStale
        const detail = yield* Effect.flatMap(Effect.map(invoices.byId(invoice.id), Option.getOrThrow), invoices.detail)
        return { outcome: outcome as SettleOutcome, invoice: detail }
      })

    return { settle } as const
  }),
  dependencies: [Invoices.Default, Payments.Default, GatewaysLive]
}) {}
