import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { CurrentUser } from "../http/Auth.ts"
import { pageResponse } from "../http/Envelope.ts"
import { InvoiceListItem } from "./Domain.ts"
import { GatewaysLive, ManualGateway } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { AdminInvoices, Orders } from "./Orders.ts"
import { Webhooks } from "./Webhooks.ts"
import { htmlResponse } from "../http/Html.ts"


const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store")))

const escapeHtml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

const page = (status: number, title: string, body: string) =>
  htmlResponse(
    status,
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<meta name="referrer" content="no-referrer">` +
      `<title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;line-height:1.5}` +
      `dt{font-weight:600}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`
  )

const BillingHandlers = HttpApiBuilder.group(Api, "billing", (handlers) =>
  Effect.gen(function*() {
    const invoices = yield* Invoices
    const orders = yield* Orders
    const webhooks = yield* Webhooks
    return handlers
      // a hot read: its wire form built directly, one query
      .handle("listInvoices", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(invoices.listPage(user.userId, urlParams.status, urlParams.page ?? 1), (page) =>
            pageResponse(InvoiceListItem, page))))
      .handle("getInvoice", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => Effect.flatMap(orders.owned(user.userId, path.invoice), invoices.detail)))
      .handle("paymentUrl", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const link = yield* orders.paymentLink(user.userId, path.invoice)
          yield* noStore
          return { url: link.url, gateway: link.gateway, expires_at: link.expiresAt.toISOString() }
        }))
      .handle("cancelInvoice", ({ path }) => Effect.flatMap(CurrentUser, (user) => orders.cancel(user.userId, path.invoice)))
      .handle("placeOrder", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          orders.place(user.userId, {
            planId: payload.plan_id,
            cycleId: payload.cycle_id,
            promoCode: Option.fromNullable(payload.promo_code)
          })))
      // the signature covers the raw body: the service checks it before parsing ([D40])
      .handle("paymentWebhook", ({ path }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = yield* Effect.orElseSucceed(request.text, () => "")
          return yield* webhooks.accept(path.gateway, raw, request.headers["x-signature"])
        }))
  }))

const BillingAdminHandlers = HttpApiBuilder.group(Api, "billingAdmin", (handlers) =>
  Effect.gen(function*() {
    const admin = yield* AdminInvoices
    return handlers
      .handle("createInvoice", ({ path, payload }) =>
        admin.create(path.user, {
          planId: payload.plan_id,
          cycleId: payload.cycle_id,
          amount: Option.fromNullable(payload.amount),
          status: payload.status ?? "pending",
          promoCode: Option.fromNullable(payload.promo_code)
        }))
      .handle("markPaid", ({ path }) => admin.markPaid(path.invoice))
  }))

const BillingPagesHandlers = HttpApiBuilder.group(Api, "billingPages", (handlers) =>
  Effect.gen(function*() {
    const invoices = yield* Invoices
    const manual = yield* ManualGateway
    return handlers.handle("payPage", ({ path, urlParams }) =>
      Effect.gen(function*() {
        // a forged, altered or expired link (or one for an invoice that is gone) is one 403 page:
        // it tells a guesser nothing about which invoices exist
        const invalid = page(403, "Payment link invalid", "<p>This payment link is invalid or has expired. Ask for a new one from your invoices.</p>")
        const uuid = path.invoice.toLowerCase()
        if ((yield* manual.checkLink(uuid, urlParams.expires, urlParams.signature)) !== "valid") return invalid
        const found = yield* invoices.byUuid(uuid)
        if (Option.isNone(found)) return invalid
        const inv = yield* invoices.detail(found.value)
        const rows = [
          ["Invoice", inv.uuid],
          ["Plan", `${inv.plan.name} (${inv.cycle.name})`],
          ["Amount", `${inv.amount} ${inv.currency}`],
          ["Status", inv.status],
          ["Due", inv.due_date.toISOString().slice(0, 10)]
        ].map(([k, v]) => `<dt>${escapeHtml(k!)}</dt><dd>${escapeHtml(v!)}</dd>`).join("")
        const how = inv.status === "pending"
          ? `<h2>How to pay</h2><p>Pay by bank transfer of <strong>${escapeHtml(`${inv.amount} ${inv.currency}`)}</strong> with the reference <code>${escapeHtml(inv.uuid)}</code>. Your service starts as soon as the payment is recorded.</p>`
          : `<p>This invoice is ${escapeHtml(inv.status)}: there is nothing to pay.</p>`
        return page(200, "Pay your invoice", `<dl>${rows}</dl>${how}`)
      }))
  }))

export const BillingHttpLive = Layer.mergeAll(BillingHandlers, BillingAdminHandlers, BillingPagesHandlers).pipe(
  Layer.provide(Layer.mergeAll(Invoices.Default, Orders.Default, AdminInvoices.Default, Webhooks.Default, GatewaysLive))
)
