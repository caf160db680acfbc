import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { DomainEvents } from "../events/DomainEvents.ts"
import { AppClock } from "../platform/Clock.ts"
import { ValidationError } from "../platform/Errors.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { Services } from "../services/Services.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { toCents } from "../catalog/Money.ts"
import { Schedules } from "../services/Schedule.ts"
import { Balance } from "./Balance.ts"
import { type Invoice, InvoiceNotPayable } from "./Domain.ts"
import { invoiceEvent, Invoices } from "./Invoices.ts"

export type PaidOutcome = "paid" | "already-paid"

const sqlState = (e: unknown) =>
  e instanceof SqlError && typeof e.cause === "object" && e.cause !== null && "code" in e.cause
    ? String((e.cause as { code: unknown }).code)
    : ""

/** deadlock detected, serialization failure: safe to run the whole transaction again */
const isTransient = (e: unknown) => ["40P01", "40001"].includes(sqlState(e))
const isUniqueViolation = (e: unknown) => sqlState(e) === "23505"

const transactionTaken = () => ValidationError.field("transaction_id", "The transaction id has already been taken.")

/**
 * Paying an invoice ([D35], [D40]): marking it paid, recording the payment event and
 * activating or extending exactly one service happen in one transaction, with the invoice row
 * locked, so replays and concurrent payments change things once.
 */
export class Payments extends Effect.Service<Payments>()("billing/Payments", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const invoices = yield* Invoices
    const services = yield* Services
    const notifications = yield* Notifications
    const domainEvents = yield* DomainEvents
    const schedules = yield* Schedules
    const balance = yield* Balance
    const catalog = yield* Catalog

    /**
     * [D108]: a change invoice switches its service at once (a credit above the price goes to the
     * balance, [D109]); a renewal for the downgrade scheduled on its service continues on the new
     * plan; any other invoice activates or extends as [D35] says.
     */
    const activateOrChange = (invoice: Invoice, userId: number) =>
      Effect.gen(function*() {
        const { change_credit, cycle_id, plan_id, service_id } = invoice
        if (service_id !== null && change_credit !== null) {
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
            const period = yield* schedules.switchPlan({ serviceId: service_id, userId, planId: plan_id, cycleId: cycle_id, kind: "downgrade", startNow: false })
            return { serviceId: service_id, ...period }
          }
        }
        return yield* services.activatePeriod({ serviceId: service_id, userId, planId: plan_id, cycleId: cycle_id })
      })

    const markPaid = (invoiceId: number, options: { readonly transactionId: string | null; readonly gateway: string; readonly payload?: unknown }) =>
      sql.withTransaction(Effect.gen(function*() {
        const now = yield* clock.now
        const invoice = yield* invoices.lock(invoiceId)
        if (Option.isNone(invoice)) return yield* Effect.fail(new InvoiceNotPayable())
        const { id, service_id, status, user_id } = invoice.value
        if (options.transactionId !== null) {
          const used = yield* invoices.paymentOf(options.transactionId)
          if (Option.isSome(used)) {
            if (used.value.invoice_id === id) return "already-paid" as const
            return yield* Effect.fail(transactionTaken())
          }
        }
        if (status === "paid") return "already-paid" as const
        if (status !== "pending") return yield* Effect.fail(new InvoiceNotPayable())
        if (options.transactionId !== null) {
          yield* invoices.recordPayment({ gateway: options.gateway, transactionId: options.transactionId, invoiceId: id, payload: options.payload ?? {}, now })
        }
        const period = user_id === null
          ? null
          : yield* activateOrChange(invoice.value, user_id)
        yield* invoices.markPaid(id, options.transactionId, period?.serviceId ?? null, now, period)
        // [D101]: with the payment, in its transaction
        yield* domainEvents.emit({ type: "invoice.paid", data: invoiceEvent({
          ...invoice.value,
          status: "paid",
          paid_at: now,
          transaction_id: options.transactionId,
          service_id: period?.serviceId ?? service_id
        }) })
        if (user_id !== null) {
          // [D96]: the receipt, written with the payment, once per invoice
          yield* notifications.notify({
            userId: user_id,
            kind: "payment-received",
            dedupeKey: `payment-received:${invoice.value.uuid}`,
            view: {
              invoice_uuid: invoice.value.uuid,
              amount: invoice.value.amount,
              currency: invoice.value.currency,
              // [D109]: what the balance paid, shown on the receipt when it paid some
              balance_applied: invoice.value.balance_applied === "0.00" ? null : invoice.value.balance_applied,
              paid_at: now.toISOString(),
              service_id: period?.serviceId ?? null,
              period_start: period === null ? null : period.from.toISOString(),
              period_end: period === null ? null : period.to.toISOString()
            }
          })
        }
        return "paid" as const
      })).pipe(
        Effect.tap((outcome) => outcome === "paid" ? notifications.wake : Effect.void),
        // a jobs run may lock the same service and invoice in the other order: PostgreSQL aborts
        // one side with a deadlock; the payment is simply tried again
        Effect.retry({ times: 3, while: isTransient }),
        Effect.catchIf(isUniqueViolation, () => Effect.fail(transactionTaken())),
        Effect.catchTag("SqlError", Effect.die)
      )

    return { markPaid } as const
  }),
  dependencies: [Invoices.Default, Services.Default, Notifications.Default, Schedules.Default, Balance.Default, Catalog.Default]
}) {}
