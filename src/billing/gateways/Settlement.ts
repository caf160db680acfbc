import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { formatCents, toCents } from "../../catalog/Money.ts"
import { AppClock } from "../../platform/Clock.ts"
import { NotFound } from "../../platform/Errors.ts"
import { Balance } from "../Balance.ts"
import { Invoices } from "../Invoices.ts"
import { Payments } from "../Payments.ts"
import type { WebhookOutcome } from "./Gateway.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** what a settled payment did: paid its invoice, went to the balance, or was a replay that changed nothing */
export type SettleOutcome = "paid" | "credited" | "duplicate"

type Paid = Extract<WebhookOutcome, { readonly _tag: "Paid" }>

/**
 * [D123]: what a verified payment does, the same for every gateway that settles through it.
 * - a payment (by its transaction id) counts once: the same one again changes nothing;
 * - the invoice's amount in its currency while it is pending pays it ([D35]);
 * - more than that pays it and the excess goes to the balance ([D109]);
 * - less, another currency, an invoice already paid by another payment, or cancelled: the whole
 *   payment goes to the balance in the currency it was made in, and the invoice stays as it is.
 * Money received is never lost. Everything happens in one transaction with the invoice row
 * locked, so any number of deliveries at once act once.
 */
export class GatewaySettlement extends Effect.Service<GatewaySettlement>()("billing/GatewaySettlement", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const invoices = yield* Invoices
    const payments = yield* Payments
    const balance = yield* Balance

    const settle = (gateway: string, paid: Paid) =>
      Effect.gen(function*() {
        if (!UUID.test(paid.invoiceUuid)) return yield* Effect.fail(new NotFound())
        const found = yield* invoices.byUuid(paid.invoiceUuid)
        // [D40] (rev. 2): the invoice must be one of this gateway's
        if (Option.isNone(found) || found.value.gateway !== gateway) return yield* Effect.fail(new NotFound())
        const invoiceId = found.value.id
        const outcome = yield* sql.withTransaction(Effect.gen(function*() {
          const invoice = (yield* invoices.lock(invoiceId)).pipe(Option.getOrThrow)
          const used = yield* invoices.paymentOf(paid.transactionId)
          if (Option.isSome(used)) return "duplicate" as const
          const currency = paid.currency ?? invoice.currency
          const cents = paid.amountCents ?? toCents(invoice.amount)
          const due = toCents(invoice.amount)
          if (invoice.status === "pending" && currency === invoice.currency && cents >= due) {
            yield* payments.markPaid(invoice.id, { transactionId: paid.transactionId, gateway, payload: paid.payload })
            if (cents > due && invoice.user_id !== null) {
              yield* balance.adjust({ userId: invoice.user_id, currency, cents: cents - due, reason: "Overpayment", invoiceId: invoice.id })
            }
            return "paid" as const
          }
          const now = yield* clock.now
          yield* invoices.recordPayment({
            gateway,
            transactionId: paid.transactionId,
            invoiceId: invoice.id,
            payload: { ...(typeof paid.payload === "object" && paid.payload !== null ? paid.payload : {}), credited: `${formatCents(cents)} ${currency}` },
            now
          })
          if (cents > 0 && invoice.user_id !== null) {
            const reason = invoice.status === "cancelled"
              ? "Payment for a cancelled invoice"
              : invoice.status === "paid"
              ? "Payment for a paid invoice"
              : currency !== invoice.currency
              ? "Payment in another currency"
              : "Partial payment"
            yield* balance.adjust({ userId: invoice.user_id, currency, cents, reason, invoiceId: invoice.id })
          }
          return "credited" as const
        })).pipe(
          // the balance's own check (a credit never fails it) and SQL failures are defects here
          Effect.catchTag("ValidationError", Effect.die),
          Effect.catchTag("InvoiceNotPayable", Effect.die),
          Effect.catchTag("SqlError", Effect.die)
        )
        const detail = yield* Effect.flatMap(Effect.map(invoices.byId(invoiceId), Option.getOrThrow), invoices.detail)
        return { outcome: outcome as SettleOutcome, invoice: detail }
      })

    return { settle } as const
  }),
  dependencies: [Invoices.Default, Payments.Default, Balance.Default]
}) {}
