import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Ok, OkPage } from "../../http/Envelope.ts"
import { IdParam, oneOf } from "../../platform/Fields.ts"
import { PageParam } from "../../platform/Page.ts"
import { INVOICE_STATUSES } from "../Domain.ts"
import { AdminInvoiceItem, RevenueDay } from "./Domain.ts"

/** [D121]: the console's invoices (refunds: `refundsAdmin`) and the dashboard's revenue. */
export class BillingConsoleApi extends HttpApiGroup.make("billingConsole")
  .annotate(OpenApi.Description, "Every user's invoices and the revenue, for the console (admins).")
  .add(
    HttpApiEndpoint.get("listInvoices", "/admin/invoices")
      .annotateContext(describe("List all invoices (admin)", "Every user's invoices, newest first, 15 a page; `user_id` and `status` filter."))
      .setUrlParams(
        Schema.Struct({
          user_id: Schema.optional(IdParam),
          status: Schema.optional(oneOf("status", INVOICE_STATUSES)),
          page: Schema.optional(PageParam)
        })
      )
      .addSuccess(OkPage(AdminInvoiceItem, "BillingAdminInvoicePage"))
  )
  .add(
    HttpApiEndpoint.get("revenue", "/admin/revenue")
      .annotateContext(describe("Revenue of the last 30 days (admin)", "The paid invoices' amounts per day (UTC, by `paid_at`) and currency, oldest first."))
      .addSuccess(Ok(Schema.Array(RevenueDay), { identifier: "BillingRevenue" }))
  )
  .middlewareEndpoints(AdminAuthentication) {}
