import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { AdminAuthentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Ok } from "../../http/Envelope.ts"
import { BusinessRuleViolationResponse, errorEnvelope } from "../../http/Errors.ts"
import { Body, boolean, oneOf, string, UuidParam } from "../../platform/Fields.ts"
import { CreditNote } from "../Domain.ts"
import { GatewayRefundFailed } from "../gateways/Gateway.ts"
import { positiveAmount } from "../MoneyFields.ts"

export const RefundPayload = Body({
  amount: Schema.optional(positiveAmount("amount")),
  to: oneOf("to", ["balance", "gateway"] as const),
  reason: string("reason", { max: 255 }),
  end_service: Schema.optional(boolean("end_service"))
})

/** [D110]: an admin's refund of a paid invoice, as a credit note (audited, [D100]). */
export class RefundsAdminApi extends HttpApiGroup.make("refundsAdmin")
  .add(
    HttpApiEndpoint.post("refundInvoice", "/admin/invoices/:invoice/refund")
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .setPayload(RefundPayload)
      .addSuccess(Ok(CreditNote, { identifier: "CreditNoteCreated", status: 201 }))
      .addError(BusinessRuleViolationResponse)
      .addError(errorEnvelope(GatewayRefundFailed))
      .annotateContext(
        describe(
          "Refund an invoice (admin)",
          "A credit note of `amount` (default: all not yet refunded) of a paid invoice, `to` the user's balance or back through the invoice's gateway " +
            "(`manual` and `balance` cannot: 422 `errors.to`). Refunds never exceed what was paid (422 `errors.amount`); `end_service: true` cancels the " +
            "invoice's service at once. Only a `paid` invoice: else 422 `Invoice is not refundable.`; it stays `paid`."
        )
      )
  )
  .middlewareEndpoints(AdminAuthentication)
  .annotate(OpenApi.Description, "Refunds as credit notes, for admins.") {}
