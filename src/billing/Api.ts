import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { PageParam } from "../platform/Page.ts"
import { AdminAuthentication, Authentication } from "../http/Middleware.ts"
import { Ok, OkPage } from "../http/Envelope.ts"
import { errorEnvelope, ForbiddenResponse, InvalidSignatureResponse } from "../http/Errors.ts"
import { PromoInvalid } from "../catalog/Domain.ts"
import { Body, boolean, IdParam, integer, oneOf, string, UuidParam } from "../platform/Fields.ts"
import { INVOICE_STATUSES, InvoiceDetail, InvoiceListItem, InvoiceNotPayable, paymentWebhookContract } from "./Domain.ts"

const NotPayableResponse = errorEnvelope(InvoiceNotPayable)
const PromoInvalidResponse = errorEnvelope(PromoInvalid)

const ANY_INT = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }

export const PaymentUrl = Schema.Struct({ url: Schema.String, gateway: Schema.String, expires_at: Schema.String }).annotations({ identifier: "PaymentUrl" })

export const OrderPayload = Body({
  plan_id: integer("plan_id", ANY_INT),
  cycle_id: integer("cycle_id", ANY_INT),
  promo_code: Schema.optional(Schema.NullOr(string("promo_code", { max: 64 }))),
  /** [D112]: a name of `GET /v1/payment-gateways`; absent: DEFAULT_GATEWAY, else `manual` */
  gateway: Schema.optional(
    Schema.NullOr(
      string("gateway", { max: 64 }).annotations({ jsonSchema: { type: "string", minLength: 1, pattern: "\\S", maxLength: 64, examples: ["manual"] } })
    )
  ),
  /** [D124]: keep the card for the renewals (Stripe saves it at Checkout for off-session charges) */
  save_card: Schema.optional(boolean("save_card"))
})

/** The caller's invoices and orders; the payment webhook ([D35]-[D40]). */
export class BillingApi extends HttpApiGroup.make("billing")
  .annotate(OpenApi.Description, "Orders, invoices, payment links and the payment gateways' webhook.")
  .add(
    HttpApiEndpoint.get("listInvoices", "/invoices")
      .annotateContext(
        describe("List your invoices", "The caller's invoices, newest first, 15 a page, optionally filtered by `status` (`pending`, `paid`, `cancelled`).")
      )
      .setUrlParams(
        Schema.Struct({
          page: Schema.optional(PageParam),
          status: Schema.optional(oneOf("status", INVOICE_STATUSES))
        })
      )
      .addSuccess(OkPage(InvoiceListItem, "InvoicePage"))
  )
  .add(
    HttpApiEndpoint.get("getInvoice", "/invoices/:invoice")
      .annotateContext(
        describe("Get an invoice", "One of the caller's invoices by uuid, with its line, discount and payment details. Another user's invoice is 404.")
      )
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .addSuccess(Ok(InvoiceDetail, { identifier: "InvoiceDetailResponse" }))
  )
  .add(
    HttpApiEndpoint.get("paymentUrl", "/invoices/:invoice/payment-url")
      .annotateContext(
        describe(
          "Get a payment link",
          "A link where the invoice can be paid, with its expiry: the `manual` gateway's signed pay page, or a Stripe Checkout page (the same one while it is open). A paid or cancelled invoice is 422 `Invoice is not payable.`."
        )
      )
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .addSuccess(Ok(PaymentUrl, { identifier: "PaymentUrlResponse" }))
      .addError(NotPayableResponse)
  )
  .add(
    // [D33] (rev. 2): the caller's own pending invoice; its promo use is given back
    HttpApiEndpoint.post("cancelInvoice", "/invoices/:invoice/cancel")
      .annotateContext(
        describe(
          "Cancel a pending invoice",
          "Cancels the caller's own pending invoice and gives back its promo use; any other status is 422 `Invoice is not payable.`."
        )
      )
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .addSuccess(Ok(InvoiceDetail, { identifier: "InvoiceCancelled" }))
      .addError(NotPayableResponse)
  )
  .add(
    HttpApiEndpoint.post("placeOrder", "/orders")
      .annotateContext(
        describe(
          "Order a plan",
          "Creates a pending invoice (201) for a plan and cycle, with an optional promo code and an optional `gateway` (a name from `GET /v1/payment-gateways`; default: the deployment's default, else `manual`; another is 422 `errors.gateway`). When it is paid the service starts, or the current service on that plan is extended."
        )
      )
      .setPayload(OrderPayload)
      .addSuccess(Ok(InvoiceDetail, { identifier: "OrderPlaced", status: 201 }))
      .addError(PromoInvalidResponse)
  )
  .middlewareEndpoints(Authentication)
  .add(
    // the signature covers the raw body: the handler reads and checks it before parsing ([D40])
    HttpApiEndpoint.post("paymentWebhook", "/webhooks/payments/:gateway")
      .annotateContext(
        describe(
          "Receive a payment event (gateway)",
          "Called by a payment gateway, signed with `X-Signature: t=<unix>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">`. A bad or stale signature is 401 `Invalid signature.` and changes nothing; the same event twice changes nothing the second time. Money is never lost ([D123]): a payment of a pending invoice of at least its amount in its currency pays it (any excess to the payer's balance); a second payment of a paid invoice, a payment of a cancelled one, an underpayment or another currency is 200 and credited to the payer's balance."
        )
      )
      .setPath(Schema.Struct({ gateway: Schema.String }))
      // the handler reads the raw body (the signature covers its bytes): the document says what it holds
      .annotateContext(OpenApi.annotations({ override: paymentWebhookContract }))
      .addSuccess(Ok(InvoiceDetail, { identifier: "PaymentWebhookAccepted" }))
      .addError(InvalidSignatureResponse)
      .addError(NotPayableResponse)
  ) {}

/** `/v1/admin/users/{user}/invoices`, `/v1/admin/invoices/{invoice}/mark-paid` ([D70]). */
export class BillingAdminApi extends HttpApiGroup.make("billingAdmin")
  .annotate(OpenApi.Description, "Invoices, for admins.")
  .add(
    HttpApiEndpoint.post("createInvoice", "/admin/users/:user/invoices")
      .annotateContext(
        describe("Create an invoice for a user (admin)", "An invoice for a plan and cycle, optionally with another amount, a status or a promo code.")
      )
      .setPath(Schema.Struct({ user: IdParam }))
      .setPayload(
        Body({
          plan_id: integer("plan_id", ANY_INT),
          cycle_id: integer("cycle_id", ANY_INT),
          amount: Schema.optional(
            Schema.Union(Schema.String, Schema.Number).annotations({
              message: () => "The amount field must be a decimal number.",
              jsonSchema: {
                anyOf: [
                  { type: "string", pattern: "^\\s*\\d{1,10}(\\.\\d{1,2})?\\s*$", examples: ["9.99"] },
                  { type: "number", minimum: 0 }
                ]
              }
            })
          ),
          status: Schema.optional(oneOf("status", INVOICE_STATUSES)),
          promo_code: Schema.optional(Schema.NullOr(string("promo_code", { max: 64 })))
        })
      )
      .addSuccess(Ok(InvoiceDetail, { identifier: "AdminInvoiceCreated", status: 201 }))
      .addError(PromoInvalidResponse)
      .addError(NotPayableResponse)
  )
  .add(
    HttpApiEndpoint.post("markPaid", "/admin/invoices/:invoice/mark-paid")
      .annotateContext(describe("Mark an invoice paid (admin)", "Records the payment and activates or extends the service as a gateway payment would."))
      .setPath(Schema.Struct({ invoice: UuidParam }))
      .addSuccess(Ok(InvoiceDetail, { identifier: "AdminInvoicePaid" }))
      .addError(NotPayableResponse)
  )
  .middlewareEndpoints(AdminAuthentication) {}

/** HTML page outside `/v1`: `/pay/{uuid}` of the manual gateway ([D26], [D37]). */
export class BillingPagesApi extends HttpApiGroup.make("billingPages")
  .add(
    HttpApiEndpoint.get("payPage", "/pay/:invoice")
      .setPath(Schema.Struct({ invoice: Schema.String }))
      .setUrlParams(Schema.Struct({ expires: Schema.optional(Schema.String), signature: Schema.optional(Schema.String) }))
      .addSuccess(HttpApiSchema.Text({ contentType: "text/html; charset=utf-8" }))
      .addError(ForbiddenResponse)
  )
  .annotate(OpenApi.Exclude, true) {}
