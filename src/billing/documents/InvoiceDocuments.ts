import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Users } from "../../accounts/Users.ts"
import { formatCents, toCents } from "../../catalog/Money.ts"
import { AppConfig } from "../../platform/Config.ts"
import { NotFound, orNotFound } from "../../platform/Errors.ts"
import type { InvoiceDetail } from "../Domain.ts"
import { Invoices } from "../Invoices.ts"
import type { CreditNoteLine, InvoiceDocument } from "./InvoicePdf.ts"
import { InvoicePeriods } from "./InvoicePeriods.ts"
import type { UserId } from "../../platform/Ids.ts"

/**
 * What the invoice detail carries once the balance ([D109]) and refunds ([D110]) are on it; until
 * then a document shows a balance of 0.00 and no credit notes. The seam for those two rooms' fields.
 */
type DetailWithMoneyMoves = InvoiceDetail & {
  readonly balance_applied?: string
  readonly credit_notes?: ReadonlyArray<{
    readonly id: number | string
    readonly amount: string
    readonly currency: string
    readonly to: string
    readonly reason: string
    readonly created_at: Date | string
  }>
}

/**
 * pdf-lib (about 20 MB resident) is loaded at the first invoice PDF a process draws, not at start-up
 * (issue 27; docs/decisions.md, "Idle memory"); the module stays loaded after that.
 */
const renderInvoicePdf = (doc: InvoiceDocument): Promise<Uint8Array> => import("./InvoicePdf.ts").then((pdf) => pdf.renderInvoicePdf(doc))

const creditNotesOf = (detail: DetailWithMoneyMoves): ReadonlyArray<CreditNoteLine> =>
  (detail.credit_notes ?? []).map((n) => ({
    id: n.id,
    amount: n.amount,
    currency: n.currency,
    to: n.to,
    reason: n.reason,
    createdAt: typeof n.created_at === "string" ? new Date(n.created_at) : n.created_at
  }))

/** [D113]: the caller's invoice as a PDF (another user's is 404, [D11]) */
export class InvoiceDocuments extends Effect.Service<InvoiceDocuments>()("billing/InvoiceDocuments", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const invoices = yield* Invoices
    const periods = yield* InvoicePeriods
    const users = yield* Users

    const pdfOf = (userId: UserId, uuid: string) =>
      Effect.gen(function* () {
        const invoice = yield* Effect.flatMap(invoices.byUuid(uuid.toLowerCase()), orNotFound)
        if (invoice.user_id !== userId) return yield* Effect.fail(new NotFound())
        const buyer = yield* Effect.flatMap(users.findById(userId), orNotFound)
        const detail: DetailWithMoneyMoves = yield* invoices.detail(invoice)
        const period = yield* periods.of(invoice.id)
        const balanceApplied = detail.balance_applied ?? "0.00"
        const company = config.company
        const bytes = yield* Effect.promise(() =>
          renderInvoicePdf({
            // [D120]: in the buyer's language
            locale: buyer.locale,
            seller: {
              name: Option.getOrNull(company?.name ?? Option.none()),
              address: Option.getOrNull(company?.address ?? Option.none()),
              taxId: Option.getOrNull(company?.taxId ?? Option.none())
            },
            buyer: { name: buyer.name, email: buyer.email },
            uuid: invoice.uuid,
            status: invoice.status,
            createdAt: invoice.created_at,
            paidAt: invoice.paid_at,
            dueDate: invoice.due_date,
            plan: detail.plan.name,
            cycle: detail.cycle.name,
            durationDays: detail.cycle.duration_days,
            period: Option.getOrNull(period),
            subtotal: formatCents(toCents(invoice.amount) + toCents(invoice.discount) + toCents(balanceApplied)),
            discount: invoice.discount,
            promoCode: invoice.promo_code,
            balanceApplied,
            amount: invoice.amount,
            currency: invoice.currency,
            gateway: invoice.gateway,
            creditNotes: creditNotesOf(detail)
          })
        )
        return { filename: `invoice-${invoice.uuid}.pdf`, bytes }
      })

    return { pdfOf } as const
  }),
  dependencies: [Invoices.Default, InvoicePeriods.Default, Users.Default]
}) {}
