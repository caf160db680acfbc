import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Catalog } from "../catalog/Catalog.ts"
import { formatCents, toCents } from "../catalog/Money.ts"
import type { DomainEvents } from "../events/DomainEvents.ts"
import type { AppClock } from "../platform/Clock.ts"
import { makePage } from "../platform/Page.ts"
import { type Applied, type Balance, type BalanceTransaction, insufficientBalance } from "./Balance.ts"
import type { Invoice, InvoiceDetail } from "./Domain.ts"
import type { PaymentGateway } from "./gateways/Gateway.ts"
import { invoiceEvent, type Invoices, type NewInvoice } from "./Invoices.ts"
import { InvoiceUuid, UserId } from "../platform/Ids.ts"

/**
 * The billing room's tables in memory for its `static Test` layers (issue 35): the rules the
 * SQL holds, kept; locks lock nothing (one fiber at a time touches memory).
 */

type BalanceShape = Parameters<(typeof Balance)["make"]>[0]
type InvoicesShape = Parameters<(typeof Invoices)["make"]>[0]

const signed = (cents: number) => `${cents < 0 ? "-" : ""}${formatCents(Math.abs(cents))}`

/**
 * `Balance.Test`: balances per user and currency and their ledger ([D109]); a debit below zero
 * fails `Insufficient balance.` and changes nothing. `applyTo` takes from the balance and
 * answers what it applied; the invoice's own columns are `Invoices.Test`'s, not moved here.
 */
export const memoryBalance = (clock: AppClock["Type"]): BalanceShape => {
  const amounts = new Map<string, number>()
  const ledger: Array<BalanceTransaction & { readonly userId: UserId }> = []
  const key = (userId: UserId, currency: string) => `${userId}:${currency}`

  const adjust = (entry: {
    readonly userId: UserId
    readonly currency: string
    readonly cents: number
    readonly reason: string
    readonly invoiceId: number | null
  }) =>
    Effect.flatMap(clock.now, (now) => {
      const before = amounts.get(key(entry.userId, entry.currency))
      const after = (before ?? 0) + entry.cents
      if ((before === undefined && entry.cents <= 0) || after < 0) return Effect.fail(insufficientBalance())
      amounts.set(key(entry.userId, entry.currency), after)
      const transaction: BalanceTransaction = {
        id: ledger.length + 1,
        amount: signed(entry.cents),
        currency: entry.currency,
        reason: entry.reason,
        invoice_uuid: null,
        created_at: now
      }
      ledger.push({ ...transaction, userId: entry.userId })
      return Effect.succeed({ cents: after, transaction })
    })

  const sums = (userId: UserId, of: (currency: string) => number) =>
    [...new Set(ledger.filter((t) => t.userId === userId).map((t) => t.currency))].sort().map((currency) => ({ currency, amount: formatCents(of(currency)) }))

  return {
    adjust,
    adjustNow: adjust,
    applyTo: (invoice) =>
      Effect.gen(function* () {
        const due = toCents(invoice.amount)
        const available = amounts.get(key(invoice.userId, invoice.currency)) ?? 0
        const applied = Math.min(available, due)
        if (applied === 0) return { appliedCents: 0, leftCents: due } satisfies Applied
        yield* Effect.orDie(
          adjust({ userId: invoice.userId, currency: invoice.currency, cents: -applied, reason: "Applied to invoice", invoiceId: invoice.id })
        )
        return { appliedCents: applied, leftCents: due - applied } satisfies Applied
      }),
    holders: (userIds) =>
      Effect.sync(
        () =>
          new Set([...amounts.entries()].filter(([k, cents]) => cents > 0 && userIds.includes(Number(k.split(":")[0]))).map(([k]) => k)) as ReadonlySet<string>
      ),
    returnFrom: (invoice) =>
      invoice.userId === null || toCents(invoice.balanceApplied) === 0
        ? Effect.void
        : Effect.asVoid(
            Effect.orDie(
              adjust({
                userId: invoice.userId,
                currency: invoice.currency,
                cents: toCents(invoice.balanceApplied),
                reason: "Invoice cancelled",
                invoiceId: invoice.id
              })
            )
          ),
    amountsOf: (userId) =>
      Effect.sync(() =>
        [...amounts.entries()]
          .filter(([k]) => k.startsWith(`${userId}:`))
          .map(([k, cents]) => ({ currency: k.split(":")[1]!, amount: formatCents(cents) }))
          .sort((a, b) => a.currency.localeCompare(b.currency))
      ),
    transactionsPage: (userId, pageNo) =>
      Effect.sync(() => {
        const mine = ledger
          .filter((t) => t.userId === userId)
          .reverse()
          .map(({ userId: _, ...t }) => t)
        return makePage({
          rows: mine.slice((pageNo - 1) * 15, pageNo * 15),
          total: mine.length,
          page: pageNo,
          perPage: 15,
          baseUrl: "/v1/account/balance/transactions"
        })
      }),
    ledgerSums: (userId) =>
      Effect.sync(() =>
        sums(userId, (currency) =>
          ledger
            .filter((t) => t.userId === userId && t.currency === currency)
            .reduce((n, t) => n + (t.amount.startsWith("-") ? -toCents(t.amount.slice(1)) : toCents(t.amount)), 0)
        )
      )
  }
}

/**
 * `Invoices.Test`: the invoices in memory ([D33] rev. 2's uses of a promo, [D36]'s details, a
 * pending invoice cancelled once), each insert emitting `invoice.created` ([D101]) as the table's
 * does. Renewals ([D80]), payment events and the pages are the database's: not here.
 */
export const memoryInvoices = (clock: AppClock["Type"], catalog: Catalog, domainEvents: DomainEvents["Type"]): Partial<InvoicesShape> => {
  const rows = new Map<number, Invoice>()
  const payments = new Map<string, number>()
  let nextId = 1
  const byId = (id: number) => Effect.sync(() => Option.fromNullable(rows.get(id)))
  const set = (id: number, change: (i: Invoice) => Invoice) =>
    Option.map(Option.fromNullable(rows.get(id)), (i) => {
      const changed = change(i)
      rows.set(id, changed)
      return changed
    })

  return {
    byId,
    lock: byId,
    byUuid: (uuid) => Effect.sync(() => Option.fromNullable([...rows.values()].find((i) => i.uuid === uuid.toLowerCase()))),
    detail: (r) =>
      Effect.map(
        catalog.rowsOf([r.plan_id], [r.cycle_id]),
        (c): InvoiceDetail => ({
          id: r.id,
          uuid: r.uuid,
          amount: r.amount,
          currency: r.currency,
          status: r.status,
          gateway: r.gateway,
          created_at: r.created_at,
          paid_at: r.paid_at,
          discount: r.discount,
          balance_applied: r.balance_applied,
          refunded_amount: r.refunded_amount,
          credit_notes: [],
          promo_code: r.promo_code,
          plan: { name: c.plan(r.plan_id).name },
          cycle: { name: c.cycle(r.cycle_id).name, duration_days: c.cycle(r.cycle_id).duration_days },
          due_date: r.due_date
        })
      ),
    promoUsesOf: (userId, promoId) =>
      Effect.sync(() => [...rows.values()].filter((i) => i.user_id === userId && i.promo_code_id === promoId && i.status !== "cancelled").length),
    insert: (invoice: NewInvoice) =>
      Effect.flatMap(clock.now, (now) => {
        const created: Invoice = {
          id: nextId++,
          uuid: InvoiceUuid.make(crypto.randomUUID()),
          user_id: invoice.userId,
          service_id: invoice.serviceId,
          plan_id: invoice.planId,
          cycle_id: invoice.cycleId,
          amount: invoice.amount,
          discount: invoice.discount,
          balance_applied: "0.00",
          refunded_amount: "0.00",
          change_credit: null,
          change_source_id: null,
          credited_amount: "0.00",
          currency: invoice.currency,
          status: invoice.status,
          gateway: invoice.gateway ?? "manual",
          promo_code: invoice.promoCode,
          promo_code_id: invoice.promoId,
          due_date: invoice.dueDate,
          paid_at: null,
          transaction_id: null,
          created_at: now,
          save_card: false
        }
        rows.set(created.id, created)
        return Effect.as(domainEvents.emit({ type: "invoice.created", data: invoiceEvent(created) }), created)
      }),
    cancelPending: (id) => Effect.sync(() => (rows.get(id)?.status === "pending" ? set(id, (i) => ({ ...i, status: "cancelled" })) : Option.none())),
    cancelPendingRenewals: () => Effect.succeed([]),
    markPaid: (id, transactionId, serviceId, now) =>
      Effect.sync(() => void set(id, (i) => ({ ...i, status: "paid", paid_at: now, transaction_id: transactionId, service_id: serviceId ?? i.service_id }))),
    paymentOf: (transactionId) => Effect.sync(() => Option.map(Option.fromNullable(payments.get(transactionId)), (invoiceId) => ({ invoice_id: invoiceId }))),
    recordPayment: (event) => Effect.sync(() => void payments.set(event.transactionId, event.invoiceId)),
    cancelOverdue: (limit) =>
      Effect.map(clock.now, (now) =>
        [...rows.values()]
          .filter((i) => i.status === "pending" && i.due_date.getTime() < now.getTime())
          .sort((a, b) => a.due_date.getTime() - b.due_date.getTime())
          .slice(0, limit)
          .map((i) => {
            rows.set(i.id, { ...i, status: "cancelled" })
            return { id: i.id, promo_code_id: i.promo_code_id, user_id: i.user_id, currency: i.currency, balance_applied: i.balance_applied }
          })
      )
  }
}

/** `TrialClaims.Test` ([D35] rev. 2): one trial per address ever, in any case */
export const memoryTrialClaims = () => {
  const claimed = new Set<string>()
  return {
    claim: (email: string) =>
      Effect.sync(() => {
        const address = email.trim().toLowerCase()
        if (claimed.has(address)) return false
        claimed.add(address)
        return true
      })
  }
}

/**
 * The `manual` gateway of `PaymentGateways.Test`: a link to a stand-in page, valid 30 minutes
 * by the test's clock ([D37]); it cannot refund ([D110]).
 */
export const standInManualGateway = (clock: AppClock["Type"]): PaymentGateway => ({
  name: "manual",
  displayName: "Bank transfer",
  paymentLink: (invoice) =>
    Effect.map(clock.now, (now) => ({ url: `https://pay.example.test/${invoice.uuid}`, expiresAt: new Date(now.getTime() + 30 * 60_000) }))
})
