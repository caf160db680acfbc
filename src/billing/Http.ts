import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { Api } from "../Api.ts"
import { orNotFound } from "../http/Errors.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { normalizeAmount, parseCents } from "../catalog/Money.ts"
import { CurrentUser } from "../http/Auth.ts"
import { makePage, pageResponse } from "../http/Envelope.ts"
import { BusinessRuleViolation, InvalidSignature, NotFound, ValidationError } from "../http/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, hmacSha256Hex } from "../platform/Crypto.ts"
import { ManualGateway, PaymentGateways } from "./Gateways.ts"
import { InvoiceListItem, type InvoiceRow, Invoices, toDetail, toListItem } from "./Invoices.ts"
import { NOT_PAYABLE, Payments } from "./Payments.ts"
import { htmlResponse } from "../http/Html.ts"

const PER_PAGE = 15
const DAY_MS = 86_400_000
const SIGNATURE_TOLERANCE_SECONDS = 300

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

/** `t=<unix>,v1=<hex>` of [D40] */
const parseSignature = (header: string | undefined) => {
  const parts = new Map((header ?? "").split(",").map((p) => p.trim().split("=", 2) as [string, string]))
  const t = parts.get("t")
  const v1 = parts.get("v1")
  return t && /^\d{1,12}$/.test(t) && v1 && /^[0-9a-f]{64}$/i.test(v1) ? Option.some({ t: Number(t), v1: v1.toLowerCase() }) : Option.none()
}

const isUuid = (s: unknown): s is string =>
  typeof s === "string" && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)

const BillingHandlers = HttpApiBuilder.group(Api, "billing", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const invoices = yield* Invoices
    const payments = yield* Payments
    const catalog = yield* Catalog
    const clock = yield* AppClock
    const config = yield* AppConfig
    const gateways = yield* PaymentGateways

    const owned = (userId: number, uuid: string) =>
      Effect.flatMap(invoices.byUuid(uuid), (row) => orNotFound(Option.filter(row, (r) => r.user_id === userId)))

    const detailById = (id: number) => Effect.map(Effect.flatMap(invoices.byId(id), orNotFound), toDetail)

    return handlers
      .handle("listInvoices", ({ urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const pageNo = urlParams.page ?? 1
          const status = Option.fromNullable(urlParams.status)
          const { rows, total } = yield* invoices.page(user.userId, status, pageNo, PER_PAGE)
          return pageResponse(InvoiceListItem, makePage({
            rows: rows.map(toListItem),
            total,
            page: pageNo,
            perPage: PER_PAGE,
            baseUrl: `${config.publicUrl}/v1/invoices`,
            query: [["status", urlParams.status]]
          }))
        }))
      .handle("getInvoice", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => Effect.map(owned(user.userId, path.invoice), toDetail)))
      .handle("paymentUrl", ({ path }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const invoice = yield* owned(user.userId, path.invoice)
          if (invoice.status !== "pending") return yield* Effect.fail(new BusinessRuleViolation({ message: NOT_PAYABLE }))
          // [D37]: the invoice's provider makes the link (the built-in one signs it with APP_KEY)
          const gateway = yield* orNotFound(gateways.get(invoice.gateway))
          const link = yield* gateway.paymentLink(invoice)
          yield* noStore
          return { url: link.url, gateway: gateway.name, expires_at: link.expiresAt.toISOString() }
        }))
      .handle("placeOrder", ({ payload }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const id = yield* sql.withTransaction(Effect.gen(function*() {
            // one order of a user at a time: two first orders at once cannot both start a trial
            yield* sql`select id from users where id = ${user.userId} for update`
            const now = yield* clock.now
            const priced = yield* catalog.priceOrder({
              planId: payload.plan_id,
              cycleId: payload.cycle_id,
              promoCode: Option.fromNullable(payload.promo_code)
            })
            const promoId = Option.getOrNull(Option.map(priced.promo, (p) => p.id))
            const promoCode = Option.getOrNull(Option.map(priced.promo, (p) => p.code))
            // [D35]: a user's first order for a plan with a trial starts the service at once
            let serviceId: number | null = null
            let dueDate = new Date(now.getTime() + 7 * DAY_MS)
            if (priced.plan.trialDays > 0) {
              const [before] = yield* sql<{ n: number }>`
                select (select count(*) from services where user_id = ${user.userId} and plan_id = ${priced.plan.id})
                     + (select count(*) from invoices where user_id = ${user.userId} and plan_id = ${priced.plan.id}) as n`
              if (Number(before!.n) === 0) {
                const trialEnd = new Date(now.getTime() + priced.plan.trialDays * DAY_MS)
                const [service] = yield* sql<{ id: number }>`
                  insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at, updated_at)
                  values (${user.userId}, ${priced.plan.id}, ${priced.cycle.id}, 'active', ${now}, ${trialEnd}, true, ${now}, ${now})
                  returning id`
                serviceId = service!.id
                dueDate = trialEnd
              }
            }
            const [row] = yield* sql<{ id: number }>`
              insert into invoices (user_id, service_id, plan_id, cycle_id, amount, discount, currency, status, gateway,
                                    promo_code, promo_code_id, due_date, created_at)
              values (${user.userId}, ${serviceId}, ${priced.plan.id}, ${priced.cycle.id}, ${priced.amount}, ${priced.discount},
                      ${priced.currency}, 'pending', 'manual', ${promoCode}, ${promoId}, ${dueDate}, ${now})
              returning id`
            return row!.id
          })).pipe(Effect.catchTag("SqlError", Effect.die))
          return yield* detailById(id)
        }))
      .handle("paymentWebhook", ({ path }) =>
        Effect.gen(function*() {
          const secret = yield* orNotFound(config.paymentWebhookSecret)
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = yield* Effect.orElseSucceed(request.text, () => "")
          const now = yield* clock.now
          const signature = parseSignature(request.headers["x-signature"])
          const valid = Option.match(signature, {
            onNone: () => false,
            onSome: ({ t, v1 }) =>
              Math.abs(now.getTime() / 1000 - t) <= SIGNATURE_TOLERANCE_SECONDS &&
              constantTimeEqual(v1, hmacSha256Hex(Redacted.value(secret), `${t}.${raw}`))
          })
          if (!valid) return yield* Effect.fail(new InvalidSignature())
          if (Option.isNone(gateways.get(path.gateway))) return yield* Effect.fail(new NotFound())
          let body: unknown
          try {
            body = JSON.parse(raw)
          } catch {
            return yield* Effect.fail(ValidationError.field("body", "The body must be valid JSON."))
          }
          if (typeof body !== "object" || body === null || Array.isArray(body)) {
            return yield* Effect.fail(ValidationError.field("body", "The body must be a JSON object."))
          }
          const event = body as Record<string, unknown>
          const errors: Record<string, Array<string>> = {}
          if (event["invoice_uuid"] === undefined) errors["invoice_uuid"] = ["The invoice uuid field is required."]
          else if (typeof event["invoice_uuid"] !== "string") errors["invoice_uuid"] = ["The invoice uuid field must be a string."]
          if (event["status"] === undefined) errors["status"] = ["The status field is required."]
          else if (event["status"] !== "paid") errors["status"] = ["The selected status is invalid."]
          const tx = event["transaction_id"]
          if (tx === undefined || tx === null || tx === "") errors["transaction_id"] = ["The transaction id field is required."]
          else if (typeof tx !== "string" || tx.length > 255) errors["transaction_id"] = ["The transaction id field must be a string of at most 255 characters."]
          if (Object.keys(errors).length > 0 && !("invoice_uuid" in errors) && !isUuid(event["invoice_uuid"])) {
            return yield* Effect.fail(new NotFound())
          }
          if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
          if (!isUuid(event["invoice_uuid"])) return yield* Effect.fail(new NotFound())
          const invoice: InvoiceRow = yield* Effect.flatMap(invoices.byUuid((event["invoice_uuid"] as string).toLowerCase()), orNotFound)
          yield* payments.markPaid(invoice.id, { transactionId: tx as string, gateway: path.gateway, payload: event })
          return yield* detailById(invoice.id)
        }))
  }))

const BillingAdminHandlers = HttpApiBuilder.group(Api, "billingAdmin", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const invoices = yield* Invoices
    const payments = yield* Payments
    const catalog = yield* Catalog
    const clock = yield* AppClock
    const detailById = (id: number) => Effect.map(Effect.flatMap(invoices.byId(id), orNotFound), toDetail)
    return handlers
      .handle("createInvoice", ({ path, payload }) =>
        Effect.gen(function*() {
          const { cycle, plan } = yield* catalog.anyPlanAndCycle(payload.plan_id, payload.cycle_id)
          const amount = payload.amount === undefined ? Option.none<string>() : Option.map(parseCents(payload.amount), () => normalizeAmount(payload.amount!))
          if (payload.amount !== undefined && Option.isNone(amount)) {
            return yield* Effect.fail(ValidationError.field("amount", "The amount field must be a decimal number with at most two decimals."))
          }
          const [user] = yield* sql<{ id: number }>`select id from users where id = ${path.user}`.pipe(Effect.orDie)
          if (!user) return yield* Effect.fail(new NotFound())
          const status = payload.status ?? "pending"
          const id = yield* sql.withTransaction(Effect.gen(function*() {
            const now = yield* clock.now
            let price = { amount: cycle.price, discount: "0.00", promoCode: null as string | null, promoId: null as number | null }
            if (payload.promo_code) {
              const priced = yield* catalog.priceOrder({ planId: plan.id, cycleId: cycle.id, promoCode: Option.some(payload.promo_code) })
              price = {
                amount: priced.amount,
                discount: priced.discount,
                promoCode: Option.getOrNull(Option.map(priced.promo, (p) => p.code)),
                promoId: Option.getOrNull(Option.map(priced.promo, (p) => p.id))
              }
            }
            const [row] = yield* sql<{ id: number }>`
              insert into invoices (user_id, plan_id, cycle_id, amount, discount, currency, status, gateway, promo_code,
                                    promo_code_id, due_date, created_at)
              values (${path.user}, ${plan.id}, ${cycle.id}, ${Option.getOrElse(amount, () => price.amount)}, ${price.discount},
                      ${cycle.currency}, ${status === "cancelled" ? "cancelled" : "pending"}, 'manual', ${price.promoCode},
                      ${price.promoId}, ${new Date(now.getTime() + 7 * DAY_MS)}, ${now})
              returning id`
            // a cancelled invoice holds no promo use ([D33]): it is given back in the same transaction
            if (status === "cancelled" && price.promoId !== null) yield* catalog.releasePromoUse(price.promoId)
            return row!.id
          })).pipe(Effect.catchTag("SqlError", Effect.die))
          if (status === "paid") yield* payments.markPaid(id, { transactionId: null, gateway: "manual" })
          return yield* detailById(id)
        }))
      .handle("markPaid", ({ path }) =>
        Effect.gen(function*() {
          const invoice = yield* Effect.flatMap(invoices.byUuid(path.invoice), orNotFound)
          yield* payments.markPaid(invoice.id, { transactionId: null, gateway: invoice.gateway })
          return yield* detailById(invoice.id)
        }))
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
        const inv = found.value
        const rows = [
          ["Invoice", inv.uuid],
          ["Plan", `${inv.plan_name} (${inv.cycle_name})`],
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
  Layer.provide(Layer.mergeAll(Invoices.Live, Payments.Live, Catalog.Live, PaymentGateways.Live)),
  Layer.provide(ManualGateway.Live)
)
