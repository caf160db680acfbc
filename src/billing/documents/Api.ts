import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { UuidParam } from "../../platform/Fields.ts"

/** [D113]: documents of the caller's invoices. */
export class BillingDocumentsApi extends HttpApiGroup.make("billingDocuments")
  .annotate(OpenApi.Description, "Invoices as documents a company can file.")
  .add(
    HttpApiEndpoint.get("invoicePdf", "/invoices/:invoice/pdf")
      .annotateContext(
        describe(
          "Download an invoice as PDF",
          "The caller's invoice as `application/pdf`, an attachment named `invoice-<uuid>.pdf`: seller, buyer, the line (plan, cycle, period), discount, balance applied, amount, currency, status and any credit notes. Another user's invoice is 404."
        )
      )
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .addSuccess(HttpApiSchema.Uint8Array({ contentType: "application/pdf" }))
  )
  .middlewareEndpoints(Authentication) {}
