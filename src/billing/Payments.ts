import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import { ValidationError } from "../platform/Errors.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { Services } from "../services/Services.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { formatCents, toCents } from "../catalog/Money.ts"
import { isUniqueViolation, retryConflicts } from "../platform/SqlErrors.ts"
import { Schedules } from "../services/Schedule.ts"
import { Balance } from "./Balance.ts"
import { type Invoice, InvoiceNotPayable } from "./Domain.ts"
import { invoiceEvent, Invoices } from "./Invoices.ts"
import type { UserId } from "../platform/Ids.ts"

export type PaidOutcome = "paid" | "already-paid"

/**
 * [D123]: what a payment a gateway reported did: it paid its invoice (any excess to the balance),
 * it was seen before (nothing changed), or it went to the payer's balance (a cancelled or already
 * paid invoice, less than the invoice, another currency).
 */
export type ReceiptOutcome = "paid" | "duplicate" | "credited"

/** [D123]: a payment as a gateway's adapter parsed it */
export interface ReceivedPayment {
  readonly gateway: string
  /** the provider's id of the payment: the same id again changes nothing */
  readonly transactionId: string
  /** what arrived, in cents of `currency` (an amount of two decimals) */
  readonly amountCents: number
  /** three capital letters */
  readonly currency: string
  readonly payload?: unknown
}

/** the ledger's words for a payment that went to the balance ([D123]) */
const creditReason = (why: "cancelled" | "paid" | "currency" | "short") =>
  ({
    cancelled: "Payment for a cancelled invoice",
    paid: "Second payment of a paid invoice",
    currency: "Payment in another currency",
    short: "Underpayment of invoice"
  })[why]

const transactionTaken = () => ValidationError.field("transaction_id", "The transaction id has already been taken.")

/**
 * Paying an invoice ([D35], [D40]): marking it paid, recording the payment event and
 * activating or extending exactly one service happen in one transaction, with the invoice row
 * locked, so replays and concurrent payments change things once.
 */
export class Payments extends Effect.Service<Payments>()("billing/Payments", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const invoices = yield* Invoices
    const services = yield* Services
    const notifications = yield* Notifications
    const domainEvents = yield* DomainEvents
    const schedules = yield* Schedules
    const balance = yield* Balance
    const catalog = yield* Catalog

    const newestOtherPaid = SqlSchema.findOne({
      Request: Schema.Struct({ serviceId: Schema.Number, id: Schema.Number }),
      Result: Schema.Struct({ id: Schema.Int }),
      execute: ({ id, serviceId }) => sql`select id from invoices where service_id = ${serviceId} and status = 'paid' and id <> ${id}
        order by paid_at desc, id desc limit 1`
    })
    const lockedSourceLeft = SqlSchema.single({
      Request: Schema.Number,
      Result: Schema.Struct({ left: Schema.String }),
      execute: (id) => sql`select (amount + balance_applied - refunded_amount - credited_amount)::text as left
        from invoices where id = ${id} for update`
    })
    /**
     * [D108] (issue 34): a change invoice credits the unused value of the paid invoice that paid
     * the period it replaces (`change_source_id`) once. It still may when that invoice is still
     * the newest paid one of the service and what is left of it (paid, less refunds and earlier
     * credits, [D110]) covers the credit; the source row is locked for it. Else the change was
     * priced on a period that is gone (renewed, refunded, changed meanwhile): it cannot be paid.
     */
    const changeStillValid = (invoice: Invoice) =>
      Effect.gen(function* () {
        if (invoice.change_credit === null || invoice.service_id === null) return true
        // made before migration 0048 recorded the source: paid as it was priced
        if (invoice.change_source_id === null && toCents(invoice.change_credit) > 0) return true
        const newest = yield* newestOtherPaid({ serviceId: invoice.service_id, id: invoice.id }).pipe(Effect.orDie)
        const newestId = Option.getOrNull(Option.map(newest, (r) => r.id))
        if (newestId !== invoice.change_source_id) return false
        if (invoice.change_source_id === null) return true
        const source = yield* lockedSourceLeft(invoice.change_source_id).pipe(Effect.orDie)
        return toCents(source.left.startsWith("-") ? "0" : source.left) >= toCents(invoice.change_credit)
      })

    /**
     * [D108]: a change invoice switches its service at once (a credit above the price goes to the
     * balance, [D109]) and its credit counts as used on the invoice it came from ([D110]); a
     * renewal for the downgrade scheduled on its service continues on the new plan; any other
     * invoice activates or extends as [D35] says.
     */
    const activateOrChange = (invoice: Invoice, userId: UserId) =>
      Effect.gen(function* () {
        const { change_credit, cycle_id, plan_id, service_id } = invoice
        if (service_id !== null && change_credit !== null) {
          if (invoice.change_source_id !== null) {
            yield* sql`update invoices set credited_amount = credited_amount + ${change_credit}
              where id = ${invoice.change_source_id}`.pipe(Effect.orDie)
          }
          const period = yield* schedules.switchPlan({ serviceId: service_id, userId, planId: plan_id, cycleId: cycle_id, kind: "upgrade", startNow: true })
          // the period a waiting renewal of [D80] would have renewed is gone: it is cancelled, its balance given back
          const stale = yield* invoices.cancelPendingRenewals(service_id)
          for (const r of stale) {
            yield* balance.returnFrom({ id: r.id, userId: r.user_id, balanceApplied: r.balance_applied, currency: r.currency })
          }
          const { cycle } = yield* Effect.orDie(catalog.anyPlanAndCycle(plan_id, cycle_id))
          const excess = toCents(change_credit) - toCents(cycle.price)
          if (excess > 0) {
            yield* Effect.orDie(balance.adjust({ userId, currency: invoice.currency, cents: excess, reason: "Plan change credit", invoiceId: invoice.id }))
          }
          return { serviceId: service_id, ...period }
        }
        if (service_id !== null) {
          const scheduled = (yield* schedules.of(service_id)).scheduled_change
          if (scheduled !== null && scheduled.plan.id === plan_id && scheduled.cycle.id === cycle_id) {
            const period = yield* schedules.switchPlan({
              serviceId: service_id,
              userId,
              planId: plan_id,
              cycleId: cycle_id,
              kind: "downgrade",
              startNow: false
            })
            return { serviceId: service_id, ...period }
          }
        }
        return yield* services.activatePeriod({ serviceId: service_id, userId, planId: plan_id, cycleId: cycle_id })
      })

    /** a pending invoice becomes paid: its service, its event, its receipt ([D35], [D96], [D101]) */
    const settle = (invoice: Invoice, transactionId: string | null, now: Date) =>
      Effect.gen(function* () {
        const { id, service_id, user_id } = invoice
        const period = user_id === null ? null : yield* activateOrChange(invoice, user_id)
        yield* invoices.markPaid(id, transactionId, period?.serviceId ?? null, now, period)
        // [D101]: with the payment, in its transaction
        yield* domainEvents.emit({
          type: "invoice.paid",
          data: invoiceEvent({
            ...invoice,
            status: "paid",
            paid_at: now,
            transaction_id: transactionId,
            service_id: period?.serviceId ?? service_id
          })
        })
        if (user_id !== null) {
          // [D96]: the receipt, written with the payment, once per invoice
          yield* notifications.notify({
            userId: user_id,
            kind: "payment-received",
            dedupeKey: `payment-received:${invoice.uuid}`,
            view: {
              invoice_uuid: invoice.uuid,
              amount: invoice.amount,
              currency: invoice.currency,
              // [D109]: what the balance paid, shown on the receipt when it paid some
              balance_applied: invoice.balance_applied === "0.00" ? null : invoice.balance_applied,
              paid_at: now,
              service_id: period?.serviceId ?? null,
              period_start: period === null ? null : period.from,
              period_end: period === null ? null : period.to
            }
          })
        }
      })

    const markPaid = (invoiceId: number, options: { readonly transactionId: string | null; readonly gateway: string; readonly payload?: unknown }) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const now = yield* clock.now
            const invoice = yield* invoices.lock(invoiceId)
            if (Option.isNone(invoice)) return yield* Effect.fail(new InvoiceNotPayable())
            const { id, status } = invoice.value
            if (options.transactionId !== null) {
              const used = yield* invoices.paymentOf(options.transactionId)
              if (Option.isSome(used)) {
                if (used.value.invoice_id === id) return "already-paid" as const
                return yield* Effect.fail(transactionTaken())
              }
            }
            if (status === "paid") return "already-paid" as const
            if (status !== "pending") return yield* Effect.fail(new InvoiceNotPayable())
            // [D108]: a change priced on a period that is gone is not paid by hand either
            if (!(yield* changeStillValid(invoice.value))) return yield* Effect.fail(new InvoiceNotPayable())
            if (options.transactionId !== null) {
              yield* invoices.recordPayment({
                gateway: options.gateway,
                transactionId: options.transactionId,
                invoiceId: id,
                payload: options.payload ?? {},
                now
              })
            }
            yield* settle(invoice.value, options.transactionId, now)
            return "paid" as const
          })
        )
        .pipe(
          Effect.tap((outcome) => (outcome === "paid" ? notifications.wake : Effect.void)),
          // a jobs run may lock the same service and invoice in the other order: PostgreSQL aborts
          // one side with a deadlock; the payment is simply tried again
          retryConflicts,
          Effect.catchIf(isUniqueViolation, () => Effect.fail(transactionTaken())),
          Effect.catchTag("SqlError", Effect.die)
        )

    /**
     * [D123]: a payment a gateway reported for an invoice, by the rules every gateway follows. The
     * same transaction id again changes nothing ("duplicate"; on another invoice it is 422). A
     * payment of a pending invoice in its currency of at least its amount pays it, the excess to
     * the balance. Anything else is money received that no invoice takes: it is credited to the
     * payer's balance in the currency it came in ([D109]) and the invoice stays as it was: a
     * cancelled one, one already paid, an underpayment, another currency, or a plan change priced
     * on a period that is gone (that invoice is cancelled). Money received is never lost.
     */
    const receive = (invoiceId: number, payment: ReceivedPayment) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const now = yield* clock.now
            const locked = yield* invoices.lock(invoiceId)
            if (Option.isNone(locked)) return yield* Effect.fail(new InvoiceNotPayable())
            const invoice = locked.value
            const used = yield* invoices.paymentOf(payment.transactionId)
            if (Option.isSome(used)) {
              if (used.value.invoice_id === invoice.id) return "duplicate" as const
              return yield* Effect.fail(transactionTaken())
            }
            yield* invoices.recordPayment({
              gateway: payment.gateway,
              transactionId: payment.transactionId,
              invoiceId: invoice.id,
              payload: payment.payload ?? {},
              now
            })
            const due = toCents(invoice.amount)
            const inCurrency = payment.currency === invoice.currency
            let why: Parameters<typeof creditReason>[0] =
              invoice.status === "paid" ? "paid" : invoice.status === "cancelled" ? "cancelled" : !inCurrency ? "currency" : "short"
            if (invoice.status === "pending" && inCurrency && payment.amountCents >= due) {
              if (yield* changeStillValid(invoice)) {
                yield* settle(invoice, payment.transactionId, now)
                const excess = payment.amountCents - due
                if (excess > 0 && invoice.user_id !== null) {
                  yield* Effect.orDie(
                    balance.adjust({
                      userId: invoice.user_id,
                      currency: payment.currency,
                      cents: excess,
                      reason: "Overpayment of invoice",
                      invoiceId: invoice.id
                    })
                  )
                }
                return "paid" as const
              }
              // the change cannot take effect any more: it is cancelled, and the money kept on the balance
              const cancelled = yield* invoices.cancelPending(invoice.id)
              for (const c of Option.toArray(cancelled)) {
                yield* balance.returnFrom({ id: c.id, userId: c.user_id, balanceApplied: c.balance_applied, currency: c.currency })
              }
              why = "cancelled"
            }
            if (payment.amountCents > 0 && invoice.user_id !== null) {
              yield* Effect.orDie(
                balance.adjust({
                  userId: invoice.user_id,
                  currency: payment.currency,
                  cents: payment.amountCents,
                  reason: creditReason(why),
                  invoiceId: invoice.id
                })
              )
            } else if (payment.amountCents > 0) {
              // the payer's account is gone: the payment event keeps the record for an operator
              yield* Effect.logWarning(
                `payment ${payment.gateway}:${payment.transactionId} of ${formatCents(payment.amountCents)} ${payment.currency} has no account to credit`
              )
            }
            return "credited" as const
          })
        )
        .pipe(
          Effect.tap((outcome) => (outcome === "paid" ? notifications.wake : Effect.void)),
          retryConflicts,
          Effect.catchIf(isUniqueViolation, () => Effect.fail(transactionTaken())),
          Effect.catchTag("SqlError", Effect.die)
        )

    return { markPaid, receive } as const
  }),
  dependencies: [Invoices.Default, Services.Default, Notifications.Default, Schedules.Default, Balance.Default, Catalog.Default]
}) {}
