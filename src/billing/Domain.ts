import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as JSONSchema from "effect/JSONSchema"
import * as Schema from "effect/Schema"
import { label, oneOf, requiredMessage, string } from "../platform/Fields.ts"
import { InvoiceUuid, ServiceId, UserId } from "../platform/Ids.ts"

export const INVOICE_STATUSES = ["pending", "paid", "cancelled"] as const
export const InvoiceStatus = Schema.Literal(...INVOICE_STATUSES)

/** A row of `invoices`, the billing room's table; its plan and cycle come from the catalogue. */
export const Invoice = Schema.Struct({
  id: Schema.Int,
  uuid: InvoiceUuid,
  user_id: Schema.NullOr(UserId),
  service_id: Schema.NullOr(ServiceId),
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
  /** [D108] (issue 34): a change invoice's source, the paid invoice whose unused value it credits */
  change_source_id: Schema.NullOr(Schema.Int),
  /** [D110] (issue 34): what paid plan changes credited of this invoice; it cannot be refunded */
  credited_amount: Schema.String,
  currency: Schema.String,
  status: InvoiceStatus,
  gateway: Schema.String,
  promo_code: Schema.NullOr(Schema.String),
  promo_code_id: Schema.NullOr(Schema.Int),
  due_date: Schema.DateFromSelf,
  paid_at: Schema.NullOr(Schema.DateFromSelf),
  transaction_id: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  /** [D124]: the payer agreed to keep the card for the renewals (Stripe saves it at Checkout) */
  save_card: Schema.Boolean
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
/** the columns of an invoice that the list shows */
export const InvoiceListRow = Invoice.pick("id", "uuid", "amount", "currency", "status", "gateway", "created_at", "paid_at")

export const toListItem = (r: typeof InvoiceListRow.Type): typeof InvoiceListItem.Encoded => ({
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
export class InvoiceNotPayable extends Schema.TaggedError<InvoiceNotPayable>()(
  "InvoiceNotPayable",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Invoice is not payable." })
  },
  HttpApiSchema.annotations({ status: 422 })
) {}

const transactionMessage = "The transaction id field must be a string of at most 255 characters."

/** [D40]: the event a gateway sends; `amount` and `currency`, when present, must be the invoice's. */
export const PaymentEvent = Schema.Struct({
  invoice_uuid: string("invoice_uuid", { max: 1000 }),
  status: oneOf("status", ["paid"]),
  transaction_id: Schema.Unknown.pipe(
    Schema.filter((v) => v !== null && v !== "", { message: () => requiredMessage("transaction_id") }),
    Schema.filter((v): v is string => typeof v === "string" && v.length <= 255, { message: () => transactionMessage })
  ).annotations({ jsonSchema: { type: "string", minLength: 1, maxLength: 255 } }),
  amount: Schema.optional(Schema.Union(Schema.String, Schema.Number).annotations({ message: () => `The ${label("amount")} field must be a decimal string.` })),
  currency: Schema.optional(string("currency", { max: 3 }))
}).annotations({ parseOptions: { errors: "all", onExcessProperty: "ignore", exact: true } })
export type PaymentEvent = typeof PaymentEvent.Type

/**
 * What the OpenAPI document says of `POST /v1/webhooks/payments/{gateway}` beyond its endpoint
 * (issue 28): the handler reads the raw body, so the body and the `X-Signature` header are
 * declared here, the body from the schema above.
 */
const bodySchemaOf = (schema: Schema.Schema.Any) => {
  const { $schema: _dialect, ...rest } = JSONSchema.make(schema, { target: "openApi3.1" })
  // unknown fields are ignored, as every body's are
  return { ...rest, additionalProperties: true }
}

export const paymentWebhookContract = {
  parameters: [
    { name: "gateway", in: "path", required: true, schema: { type: "string", examples: ["manual"] }, description: "The invoice's gateway." },
    {
      name: "X-Signature",
      in: "header",
      required: true,
      schema: { type: "string", pattern: "^t=\\d+,v1=[0-9a-fA-F]{64}$" },
      description: '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with PAYMENT_WEBHOOK_SECRET>`; more than 300 s from now or wrong: 401.'
    }
  ],
  requestBody: {
    required: true,
    content: { "application/json": { schema: bodySchemaOf(PaymentEvent) } }
  }
}

/** One ledger row as the API shows it ([D109]): the amount signed. */
export const BalanceTransaction = Schema.Struct({
  id: Schema.Int,
  amount: Schema.String,
  currency: Schema.String,
  reason: Schema.String,
  invoice_uuid: Schema.NullOr(Schema.String),
  created_at: Schema.Date
}).annotations({ identifier: "BalanceTransaction" })
export type BalanceTransaction = typeof BalanceTransaction.Type

export const BalanceAmount = Schema.Struct({ currency: Schema.String, amount: Schema.String }).annotations({ identifier: "BalanceAmount" })

/** [D124]: a card a user agreed to keep, as the payer sees it (the card itself stays at Stripe) */
export const SavedCard = Schema.Struct({
  id: Schema.Int,
  brand: Schema.String,
  last4: Schema.String,
  exp_month: Schema.Int,
  exp_year: Schema.Int
}).annotations({ identifier: "PaymentMethod" })
export type SavedCard = typeof SavedCard.Type
