import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { Authentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Confirmation, Ok } from "../../http/Envelope.ts"
import { IdParam } from "../../platform/Fields.ts"
import { SavedCard } from "../Domain.ts"

/** [D124]: the cards the caller agreed to keep for renewals. */
export class PaymentMethodsApi extends HttpApiGroup.make("paymentMethods")
  .add(
    HttpApiEndpoint.get("listPaymentMethods", "/account/payment-methods")
      .annotateContext(
        describe(
          "List your saved cards",
          "The cards kept for renewals (`save_card: true` on an order or a plan change; Stripe saved them at Checkout), newest first, as `{id, brand, last4, exp_month, exp_year}`. An auto-renewing service's renewal is charged to the newest at `expires_at` when the balance does not cover it."
        )
      )
      .addSuccess(Ok(Schema.Array(SavedCard), { identifier: "PaymentMethodList" }))
  )
  .add(
    HttpApiEndpoint.del("deletePaymentMethod", "/account/payment-methods/:method")
      .annotateContext(describe("Forget a saved card", "Detaches the card at Stripe and forgets it: it is never charged again. Another user's card is 404."))
      .setPath(Schema.Struct({ method: IdParam }))
      .addSuccess(Confirmation("PaymentMethodDeleted"))
  )
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Description, "The cards the caller agreed to keep for renewals ([D124]).") {}
