import * as Schema from "effect/Schema"
import { InvoiceStatus } from "../Domain.ts"

/** An invoice as the console lists it: the list's fields, its owner and what was refunded. */
export const AdminInvoiceItem = Schema.Struct({
  id: Schema.Int,
  uuid: Schema.String,
  user_id: Schema.NullOr(Schema.Int),
  amount: Schema.String,
  refunded_amount: Schema.String,
  currency: Schema.String,
  status: InvoiceStatus,
  gateway: Schema.String,
  created_at: Schema.Date,
  paid_at: Schema.NullOr(Schema.Date)
}).annotations({ identifier: "BillingAdminInvoice" })

/** One day's takings in one currency: the paid invoices' `amount` by the day they were paid (UTC). */
export const RevenueDay = Schema.Struct({ day: Schema.String, currency: Schema.String, amount: Schema.String }).annotations({ identifier: "BillingRevenueDay" })
