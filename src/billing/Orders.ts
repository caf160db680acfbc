import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../accounts/Users.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { normalizeAmount, parseCents } from "../catalog/Money.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { Services } from "../services/Services.ts"
import { InvoiceNotPayable } from "./Domain.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { Payments } from "./Payments.ts"
import { TrialClaims } from "./TrialClaims.ts"
import { Balance } from "./Balance.ts"
import { Funding } from "./Funding.ts"
import type { UserId } from "../platform/Ids.ts"

const DAY_MS = 86_400_000
/** [D36]: an invoice is due 7 days after it is made */
const DUE_MS = 7 * DAY_MS

export interface OrderRequest {
  readonly planId: number
  readonly cycleId: number
  readonly promoCode: Option.Option<string>
  /** [D112]: the gateway to pay through; none: DEFAULT_GATEWAY, else `manual` */
  readonly gateway?: string | null | undefined
  /** [D124]: the payer agrees to keep the card for the renewals */
  readonly saveCard?: boolean | undefined
}

/** The caller's orders ([D35]) and cancellations ([D33] rev. 2). */
export class Orders extends Effect.Service<Orders>()("billing/Orders", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const invoices = yield* Invoices
    const domainEvents = yield* DomainEvents
    const services = yield* Services
    const trials = yield* TrialClaims
    const users = yield* Users
    const gateways = yield* PaymentGateways
    const funding = yield* Funding
    const balance = yield* Balance

    /** the invoice as it is now (after the balance paid some or all of it) */
    const reread = (id: number) =>
      Effect.flatMap(invoices.byId(id), Option.match({ onNone: () => Effect.dieMessage("a created invoice is gone"), onSome: Effect.succeed }))

    /**
     * A pending invoice for the plan and cycle, priced with the promo (its use counted with the
     * invoice). A plan with a trial, for a verified address that never had one, starts an
     * active service at once until the trial's end, when the invoice is due.
     */
    const place = (userId: UserId, order: OrderRequest) =>
      Effect.flatMap(gateways.resolve(order.gateway), (gateway) =>
        sql.withTransaction(
          Effect.gen(function* () {
            // one order of a user at a time: two first orders at once cannot both start a trial
            const user = yield* Effect.flatMap(users.lock(userId), Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed }))
            const priced = yield* catalog.priceOrder({
              planId: order.planId,
              cycleId: order.cycleId,
              promoCode: order.promoCode,
              usesOfCaller: Option.some((promoId: number) => invoices.promoUsesOf(userId, promoId))
            })
            const { cycle, plan } = priced
            const now = yield* clock.now
            const trial =
              plan.trial_days > 0 && user.email_verified_at !== null && (yield* trials.claim(user.email))
                ? Option.some(yield* services.startTrial({ userId, plan, cycle }))
                : Option.none()
            const created = yield* invoices.insert({
              userId,
              serviceId: Option.getOrNull(Option.map(trial, (t) => t.id)),
              planId: plan.id,
              cycleId: cycle.id,
              amount: priced.amount,
              discount: priced.discount,
              currency: priced.currency,
              status: "pending",
              promoCode: Option.getOrNull(Option.map(priced.promo, (p) => p.code)),
              promoId: Option.getOrNull(Option.map(priced.promo, (p) => p.id)),
              dueDate: Option.getOrElse(
                Option.map(trial, (t) => t.expiresAt),
                () => new Date(now.getTime() + DUE_MS)
              ),
              gateway: gateway.name,
              saveCard: order.saveCard ?? false
            })
            // [D109]: the balance pays what it can, in this transaction (the balance row locked)
            yield* funding.fund(created)
            return yield* reread(created.id)
          })
        )
      ).pipe(
        Effect.catchTag("SqlError", Effect.die),
        // [D101]: the invoice's (and a trial's) events go out now that they committed
        Effect.tap(() => domainEvents.wake),
        Effect.flatMap(invoices.detail)
      )

    /** the caller's own invoice (another user's is none: a 404, [D11]) */
    const owned = (userId: UserId, uuid: string) =>
      Effect.flatMap(invoices.byUuid(uuid), (found) =>
        Option.match(
          Option.filter(found, (i) => i.user_id === userId),
          {
            onNone: () => Effect.fail(new NotFound()),
            onSome: Effect.succeed
          }
        )
      )

    /** pending -> cancelled, giving its promo use back in the same transaction, exactly once */
    const cancel = (userId: UserId, uuid: string) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const invoice = yield* owned(userId, uuid)
            const cancelled = yield* invoices.cancelPending(invoice.id)
            if (Option.isNone(cancelled)) return yield* Effect.fail(new InvoiceNotPayable())
            if (cancelled.value.promo_code_id !== null) yield* catalog.releasePromoUses([cancelled.value.promo_code_id])
            // [D109]: what the balance paid goes back to it
            yield* balance.returnFrom({
              id: cancelled.value.id,
              userId: cancelled.value.user_id,
              balanceApplied: cancelled.value.balance_applied,
              currency: cancelled.value.currency
            })
            return cancelled.value
          })
        )
        .pipe(
          Effect.catchTag("SqlError", Effect.die),
          // [D123]: its payment page closes (a Stripe Checkout Session is expired)
          Effect.tap(() => gateways.closeStale),
          Effect.flatMap(invoices.detail)
        )

    /** [D37]: the invoice's provider makes the link (the built-in one signs it with APP_KEY) */
    const paymentLink = (userId: UserId, uuid: string) =>
      Effect.gen(function* () {
        const invoice = yield* owned(userId, uuid)
        if (invoice.status !== "pending") return yield* Effect.fail(new InvoiceNotPayable())
        const gateway = yield* Option.match(gateways.get(invoice.gateway), { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })
        const link = yield* gateway.paymentLink(invoice)
        return { ...link, gateway: gateway.name }
      })

    return { place, owned, cancel, paymentLink } as const
  }),
  dependencies: [Catalog.Default, Invoices.Default, Services.Default, TrialClaims.Default, Users.Default, GatewaysLive, Funding.Default, Balance.Default]
}) {
  /**
   * issue 35: the orders' rules over their neighbours' `Test` layers (invoices, users, trial
   * claims, balance, services and catalogue in memory; the stand-in `manual` gateway), all given
   * to the test too; the clock, the events, `Payments` and the SQL client (`SqlClientTest`) are the test's.
   */
  static readonly Test = Orders.DefaultWithoutDependencies.pipe(
    Layer.provideMerge(Funding.Test),
    Layer.provideMerge(Layer.mergeAll(Invoices.Test, TrialClaims.Test, Users.Test, PaymentGateways.Test)),
    Layer.provideMerge(Services.Test)
  )
}

/** An admin's invoice for a user ([D70]): any plan, an optional amount, promo and status. */
export class AdminInvoices extends Effect.Service<AdminInvoices>()("billing/AdminInvoices", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const invoices = yield* Invoices
    const domainEvents = yield* DomainEvents
    const payments = yield* Payments
    const users = yield* Users
    const gateways = yield* PaymentGateways

    const create = (
      userId: UserId,
      request: {
        readonly planId: number
        readonly cycleId: number
        readonly amount: Option.Option<string | number>
        readonly status: "pending" | "paid" | "cancelled"
        readonly promoCode: Option.Option<string>
      }
    ) =>
      Effect.gen(function* () {
        const { cycle, plan } = yield* catalog.anyPlanAndCycle(request.planId, request.cycleId)
        const amount = yield* Option.match(request.amount, {
          onNone: () => Effect.succeed(Option.none<string>()),
          onSome: (value) =>
            Option.isSome(parseCents(value))
              ? Effect.succeed(Option.some(normalizeAmount(value)))
              : Effect.fail(ValidationError.field("amount", "The amount field must be a decimal number with at most two decimals."))
        })
        if (Option.isNone(yield* users.findById(userId))) return yield* Effect.fail(new NotFound())
        const created = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const now = yield* clock.now
              const price = Option.isNone(request.promoCode)
                ? { amount: cycle.price, discount: "0.00", promo: Option.none<{ id: number; code: string }>() }
                : yield* catalog.priceOrder({ planId: plan.id, cycleId: cycle.id, promoCode: request.promoCode })
              const promoId = Option.getOrNull(Option.map(price.promo, (p) => p.id))
              const invoice = yield* invoices.insert({
                userId,
                serviceId: null,
                planId: plan.id,
                cycleId: cycle.id,
                amount: Option.getOrElse(amount, () => price.amount),
                discount: price.discount,
                currency: cycle.currency,
                status: request.status === "cancelled" ? "cancelled" : "pending",
                promoCode: Option.getOrNull(Option.map(price.promo, (p) => p.code)),
                promoId,
                dueDate: new Date(now.getTime() + DUE_MS)
              })
              // a cancelled invoice holds no promo use ([D33]): it is given back in the same transaction
              if (request.status === "cancelled" && promoId !== null) yield* catalog.releasePromoUses([promoId])
              return invoice
            })
          )
          .pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.tap(() => domainEvents.wake)
          )
        if (request.status === "paid") yield* payments.markPaid(created.id, { transactionId: null, gateway: "manual" })
        return yield* Effect.flatMap(
          Effect.flatMap(
            invoices.byId(created.id),
            Option.match({
              onNone: () => Effect.dieMessage("a created invoice is gone"),
              onSome: Effect.succeed
            })
          ),
          invoices.detail
        )
      })

    /** [D70]: marks the invoice paid and activates its service as [D35] says */
    const markPaid = (uuid: string) =>
      Effect.gen(function* () {
        const invoice = yield* Effect.flatMap(invoices.byUuid(uuid), Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed }))
        yield* payments.markPaid(invoice.id, { transactionId: null, gateway: invoice.gateway })
        // [D123]: paid by hand, its payment page (a Stripe Checkout Session) closes
        yield* gateways.closeStale
        return yield* Effect.flatMap(
          Effect.flatMap(
            invoices.byId(invoice.id),
            Option.match({
              onNone: () => Effect.fail(new NotFound()),
              onSome: Effect.succeed
            })
          ),
          invoices.detail
        )
      })

    return { create, markPaid } as const
  }),
  dependencies: [Catalog.Default, Invoices.Default, Payments.Default, Users.Default, GatewaysLive]
}) {}
