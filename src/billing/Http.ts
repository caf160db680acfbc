import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../accounts/Users.ts"
import { Api } from "../Api.ts"
import { AppConfig } from "../platform/Config.ts"
import { negotiateLocale } from "../platform/i18n/Locale.ts"
import { CurrentUser } from "../http/Auth.ts"
import { pageResponse } from "../http/Envelope.ts"
import { InvoiceListItem } from "./Domain.ts"
import { GatewaysLive, ManualGateway } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { AdminInvoices, Orders } from "./Orders.ts"
import { PaymentWebhooks } from "./PaymentWebhooks.ts"
import { payPage } from "./Pages.ts"
import { BillingDocumentsHttpLive } from "./documents/Http.ts"
import { BillingGatewaysHttpLive } from "./gateways/Http.ts"
import { noStore } from "../http/Caching.ts"
import { UserId } from "../platform/Ids.ts"

const BillingHandlers = HttpApiBuilder.group(Api, "billing", (handlers) =>
  Effect.gen(function* () {
    const invoices = yield* Invoices
    const orders = yield* Orders
    const paymentWebhooks = yield* PaymentWebhooks
    return (
      handlers
        // a hot read: its wire form built directly, one query
        .handle("listInvoices", ({ urlParams }) =>
          Effect.flatMap(CurrentUser, (user) =>
            Effect.map(invoices.listPage(user.userId, urlParams.status, urlParams.page ?? 1), (page) => pageResponse(InvoiceListItem, page))
          )
        )
        .handle("getInvoice", ({ path }) => Effect.flatMap(CurrentUser, (user) => Effect.flatMap(orders.owned(user.userId, path.invoice), invoices.detail)))
        .handle("paymentUrl", ({ path }) =>
          Effect.gen(function* () {
            const user = yield* CurrentUser
            const link = yield* orders.paymentLink(user.userId, path.invoice)
            yield* noStore
            return { url: link.url, gateway: link.gateway, expires_at: link.expiresAt.toISOString() }
          })
        )
        .handle("cancelInvoice", ({ path }) => Effect.flatMap(CurrentUser, (user) => orders.cancel(user.userId, path.invoice)))
        .handle("placeOrder", ({ payload }) =>
          Effect.flatMap(CurrentUser, (user) =>
            orders.place(user.userId, {
              planId: payload.plan_id,
              cycleId: payload.cycle_id,
              promoCode: Option.fromNullable(payload.promo_code),
              gateway: payload.gateway,
              saveCard: payload.save_card
            })
          )
        )
        // the signature covers the raw body: the service checks it before parsing ([D40])
        .handle("paymentWebhook", ({ path }) =>
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            const raw = yield* Effect.orElseSucceed(request.text, () => "")
            return yield* paymentWebhooks.accept(path.gateway, raw, request.headers["x-signature"])
          })
        )
    )
  })
)

const BillingAdminHandlers = HttpApiBuilder.group(Api, "billingAdmin", (handlers) =>
  Effect.gen(function* () {
    const admin = yield* AdminInvoices
    return handlers
      .handle("createInvoice", ({ path, payload }) =>
        admin.create(UserId.make(path.user), {
          planId: payload.plan_id,
          cycleId: payload.cycle_id,
          amount: Option.fromNullable(payload.amount),
          status: payload.status ?? "pending",
          promoCode: Option.fromNullable(payload.promo_code)
        })
      )
      .handle("markPaid", ({ path }) => admin.markPaid(path.invoice))
  })
)

const BillingPagesHandlers = HttpApiBuilder.group(Api, "billingPages", (handlers) =>
  Effect.gen(function* () {
    const invoices = yield* Invoices
    const manual = yield* ManualGateway
    const users = yield* Users
    const config = yield* AppConfig
    return handlers.handle("payPage", ({ path, request, urlParams }) =>
      Effect.gen(function* () {
        const linked = yield* invoices.linkedByManualGateway(path.invoice, urlParams, manual)
        // [D120]: the invoice owner's language, else the browser's
        const ownerId = Option.flatMap(linked, (l) => Option.fromNullable(l.userId))
        const owner = Option.isSome(ownerId) ? yield* users.findById(ownerId.value) : Option.none()
        const locale = Option.match(owner, {
          onSome: (u) => u.locale,
          onNone: () => negotiateLocale(request.headers["accept-language"])
        })
        return payPage(
          Option.map(linked, (l) => l.invoice),
          locale,
          config.appUrl
        )
      })
    )
  })
)

export const BillingHttpLive = Layer.mergeAll(
  BillingHandlers,
  BillingAdminHandlers,
  BillingPagesHandlers,
  BillingGatewaysHttpLive,
  BillingDocumentsHttpLive
).pipe(Layer.provide(Layer.mergeAll(Invoices.Default, Orders.Default, AdminInvoices.Default, PaymentWebhooks.Default, GatewaysLive, Users.Default)))
