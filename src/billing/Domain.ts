import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

export const INVOICE_STATUSES = ["pending", "paid", "cancelled"] as const
export const InvoiceStatus = Schema.Literal(...INVOICE_STATUSES)

/** A row of `invoices`, the billing room's table; its plan and cycle come from the catalogue. */
export const Invoice = Schema.Struct({
  id: Schema.Int,
  uuid: Schema.String,
  user_id: Schema.NullOr(Schema.Int),
  service_id: Schema.NullOr(Schema.Int),
  plan_id: Schema.Int,
  cycle_id: Schema.Int,
  amount: Schema.String,
  discount: Schema.String,
  /** [D109]: what the balance paid; `amount` is what is left for a gateway */
  balance_applied: Schema.String,
  /** [D110]: the sum of its credit notes */
  refunded_amount: Schema.String,
  /** [D108]: a plan change's invoice: the prorated credit of the period it replaces (else null) */
  change_credit: Schema.NullOr(Schema.String),
  currency: Schema.String,
  status: InvoiceStatus,
  gateway: Schema.String,
  promo_code: Schema.NullOr(Schema.String),
  promo_code_id: Schema.NullOr(Schema.Int),
  due_date: Schema.DateFromSelf,
  paid_at: Schema.NullOr(Schema.DateFromSelf),
  transaction_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf
})
export type Invoice = typeof Invoice.Type

/** [D110]: a credit note (a refund of a paid invoice) as the API shows it */
export const CreditNote = Schema.Struct({
  id: Schema.Int,
  invoice_uuid: Schema.String,
  amount: Schema.String,
  currency: Schema.String,
  to: Schema.Literal("balance", "gateway"),
  reason: Schema.String,
  created_at: Schema.Date
}).annotations({ identifier: "CreditNote" })
export type CreditNote = typeof CreditNote.Type

/** The spec's Invoice as listed: the row's public columns, times as ISO 8601. */
export const InvoiceListItem = Schema.Struct({
  ...Invoice.pick("id", "uuid", "amount", "currency", "status", "gateway").fields,
  created_at: Schema.Date,
  paid_at: Schema.NullOr(Schema.Date)
}).annotations({ identifier: "InvoiceListItem" })

/** The detail adds the discount, the promo, the plan's and the cycle's names and the due date. */
export const InvoiceDetail = Schema.Struct({
  ...InvoiceListItem.fields,
  discount: Schema.String,
  balance_applied: Schema.String,
  refunded_amount: Schema.String,
  credit_notes: Schema.Array(CreditNote),
  promo_code: Schema.NullOr(Schema.String),
  plan: Schema.Struct({ name: Schema.String }),
  cycle: Schema.Struct({ name: Schema.String, duration_days: Schema.Int }),
  due_date: Schema.Date
}).annotations({ identifier: "InvoiceDetail" })
export type InvoiceDetail = typeof InvoiceDetail.Type

/** The wire form of a list item, built directly for the invoices page (a hot read). */
export const toListItem = (r: Invoice): typeof InvoiceListItem.Encoded => ({
  id: r.id,
  uuid: r.uuid,
  amount: r.amount,
  currency: r.currency,
  status: r.status,
  gateway: r.gateway,
  created_at: r.created_at.toISOString(),
  paid_at: r.paid_at ? r.paid_at.toISOString() : null
})

/** [D36]: paying (or cancelling) an invoice that is not pending. */
export class InvoiceNotPayable extends Schema.TaggedError<InvoiceNotPayable>()("InvoiceNotPayable", {
  message: Schema.optionalWith(Schema.String, { default: () => "Invoice is not payable." })
}, HttpApiSchema.annotations({ status: 422 })) {}
