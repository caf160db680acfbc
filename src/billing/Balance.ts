import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { formatCents, toCents } from "../catalog/Money.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { ValidationError } from "../platform/Errors.ts"
import { makePage } from "../platform/Page.ts"
import { BalanceAmount } from "./Domain.ts"
import { memoryBalance } from "./BillingMemory.ts"
import type { UserId } from "../platform/Ids.ts"

/** [D36]: ledger pages hold 15, like invoices */
const PER_PAGE = 15

// the ledger's schemas live with the contract (`Domain.ts`, issue 34)
export { BalanceAmount, BalanceTransaction } from "./Domain.ts"

const TransactionRow = Schema.Struct({
  id: Schema.Int,
  amount: Schema.String,
  currency: Schema.String,
  reason: Schema.String,
  invoice_uuid: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf
})
const TransactionPageRow = Schema.Struct({ ...TransactionRow.fields, total_rows: Schema.Int })
const Amount = Schema.Struct({ amount: Schema.String })
const Count = Schema.Struct({ n: Schema.Int })

/** `-500` -> `"-5.00"` */
const signed = (cents: number) => `${cents < 0 ? "-" : ""}${formatCents(Math.abs(cents))}`

/** [D109]: a debit that would take a balance below zero */
export const insufficientBalance = () => ValidationError.field("amount", "Insufficient balance.")

/** What the balance paid of an invoice, and what is left for a gateway. */
export interface Applied {
  readonly appliedCents: number
  readonly leftCents: number
}

/**
 * [D109] The balance of each user per currency and its ledger (`balances`,
 * `balance_transactions`). Every change locks the balance row first (`for update`), then writes
 * the new amount and its ledger row in the caller's transaction: two invoices never spend the
 * same money, the ledger always sums to the balance, and the CHECK keeps it from going negative.
 * Call every write inside a transaction.
 */
export class Balance extends Effect.Service<Balance>()("billing/Balance", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig

    /** the balance row locked until the transaction ends (none: never credited) */
    const lockedRow = SqlSchema.findOne({
      Request: Schema.Struct({ userId: Schema.Number, currency: Schema.String }),
      Result: Amount,
      execute: ({ currency, userId }) => sql`select amount::text as amount from balances
          where user_id = ${userId} and currency = ${currency} for update`
    })
    const locked = (userId: UserId, currency: string) => lockedRow({ userId, currency }).pipe(Effect.orDie)

    const setAmount = (userId: UserId, currency: string, cents: number) =>
      sql`update balances set amount = ${formatCents(cents)} where user_id = ${userId} and currency = ${currency}`.pipe(Effect.asVoid, Effect.orDie)

    const ledgerRow = SqlSchema.single({
      Request: Schema.Struct({
        userId: Schema.Number,
        currency: Schema.String,
        cents: Schema.Number,
        reason: Schema.String,
        invoiceId: Schema.NullOr(Schema.Number),
        now: Schema.DateFromSelf
      }),
      Result: TransactionRow,
      execute: (entry) => sql`
            with t as (
              insert into balance_transactions (user_id, currency, amount, reason, invoice_id, created_at)
              values (${entry.userId}, ${entry.currency}, ${signed(entry.cents)},
                      ${entry.reason}, ${entry.invoiceId}, ${entry.now})
              returning id, amount, currency, reason, invoice_id, created_at
            )
            select t.id, t.amount::text as amount, t.currency, t.reason, i.uuid::text as invoice_uuid, t.created_at
            from t left join invoices i on i.id = t.invoice_id`
    })
    const writeLedger = (entry: { userId: UserId; currency: string; cents: number; reason: string; invoiceId: number | null }) =>
      Effect.flatMap(clock.now, (now) => ledgerRow({ ...entry, now })).pipe(Effect.orDie)

    /**
     * Adds `cents` (signed, not 0) to the balance with its ledger row; a debit below zero fails
     * `Insufficient balance.` and changes nothing. Returns the new balance in cents and the row.
     */
    const adjust = (entry: {
      readonly userId: UserId
      readonly currency: string
      readonly cents: number
      readonly reason: string
      readonly invoiceId: number | null
    }) =>
      Effect.gen(function* () {
        if (entry.cents > 0) {
          yield* sql`insert into balances (user_id, currency, amount) values (${entry.userId}, ${entry.currency}, 0)
            on conflict (user_id, currency) do nothing`.pipe(Effect.orDie)
        }
        const row = yield* locked(entry.userId, entry.currency)
        const before = Option.match(row, { onNone: () => 0, onSome: (r) => toCents(r.amount) })
        const after = before + entry.cents
        if (Option.isNone(row) || after < 0) return yield* Effect.fail(insufficientBalance())
        yield* setAmount(entry.userId, entry.currency, after)
        const transaction = yield* writeLedger(entry)
        return { cents: after, transaction }
      })

    /**
     * [D109]: a new invoice takes what it can from the balance in its currency: the balance row
     * locked, the amount moved from the invoice's `amount` to its `balance_applied` with a ledger
     * debit naming the invoice. Run it in the transaction that made the invoice.
     */
    const applyTo = (invoice: { readonly id: number; readonly userId: UserId; readonly amount: string; readonly currency: string }) =>
      Effect.gen(function* () {
        const due = toCents(invoice.amount)
        if (due === 0) return { appliedCents: 0, leftCents: 0 } satisfies Applied
        const row = yield* locked(invoice.userId, invoice.currency)
        const available = Option.match(row, { onNone: () => 0, onSome: (r) => toCents(r.amount) })
        const applied = Math.min(available, due)
        if (applied === 0) return { appliedCents: 0, leftCents: due } satisfies Applied
        yield* setAmount(invoice.userId, invoice.currency, available - applied)
        yield* writeLedger({ userId: invoice.userId, currency: invoice.currency, cents: -applied, reason: "Applied to invoice", invoiceId: invoice.id })
        yield* sql`update invoices set balance_applied = balance_applied + ${formatCents(applied)},
            amount = amount - ${formatCents(applied)},
            gateway = case when amount - ${formatCents(applied)} = 0 then 'balance' else gateway end
          where id = ${invoice.id}`.pipe(Effect.orDie)
        return { appliedCents: applied, leftCents: due - applied } satisfies Applied
      })

    /**
     * [D109]: a cancelled invoice gives its `balance_applied` back (once: call it where the invoice
     * turned cancelled, in that transaction).
     */
    const returnFrom = (invoice: { readonly id: number; readonly userId: UserId | null; readonly balanceApplied: string; readonly currency: string }) =>
      invoice.userId === null || toCents(invoice.balanceApplied) === 0
        ? Effect.void
        : Effect.asVoid(
            Effect.catchTag(
              adjust({
                userId: invoice.userId,
                currency: invoice.currency,
                cents: toCents(invoice.balanceApplied),
                reason: "Invoice cancelled",
                invoiceId: invoice.id
              }),
              "ValidationError",
              Effect.die
            )
          )

    // issue 27: the caller's reads built once, not per call
    const amountRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: BalanceAmount,
      execute: (userId) => sql`select currency, amount::text as amount from balances where user_id = ${userId} order by currency`
    })
    const transactionRows = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.Int, offset: Schema.Int }),
      Result: TransactionPageRow,
      execute: ({ offset, userId }) => sql`
        select t.id, t.amount::text as amount, t.currency, t.reason, i.uuid::text as invoice_uuid, t.created_at,
               count(*) over ()::int as total_rows
        from balance_transactions t left join invoices i on i.id = t.invoice_id
        where t.user_id = ${userId}
        order by t.created_at desc, t.id desc limit ${PER_PAGE} offset ${offset}`
    })
    const transactionCount = SqlSchema.single({
      Request: Schema.Int,
      Result: Count,
      execute: (userId) => sql`select count(*)::int as n from balance_transactions where user_id = ${userId}`
    })

    /** [D109]: the caller's balances, every currency ever credited */
    const amountsOf = (userId: UserId) => Effect.orDie(amountRows(userId))

    /** [D109]: one page of the ledger, newest first */
    const transactionsPage = (userId: UserId, pageNo: number) =>
      Effect.gen(function* () {
        const rows = yield* transactionRows({ userId, offset: (pageNo - 1) * PER_PAGE })
        const total = rows[0]?.total_rows ?? (pageNo === 1 ? 0 : (yield* transactionCount(userId)).n)
        return makePage({
          rows: rows.map(({ total_rows: _, ...r }) => r),
          total,
          page: pageNo,
          perPage: PER_PAGE,
          baseUrl: `${config.publicUrl}/v1/account/balance/transactions`
        })
      }).pipe(Effect.orDie)

    /** what the ledger sums to per currency (the invariant's check, for tests and operators) */
    const ledgerSumRows = SqlSchema.findAll({
      Request: Schema.Number,
      Result: BalanceAmount,
      execute: (userId) => sql`select currency, sum(amount)::text as amount from balance_transactions
          where user_id = ${userId} group by currency order by currency`
    })
    const ledgerSums = (userId: UserId) => ledgerSumRows(userId).pipe(Effect.orDie)

    const holderRows = SqlSchema.findAll({
      Request: Schema.Array(Schema.Number),
      Result: Schema.Struct({ user_id: Schema.Int, currency: Schema.String }),
      execute: (userIds) => sql`select user_id, currency from balances where user_id in ${sql.in(userIds)} and amount > 0`
    })
    /** `user:currency` of each of these users' balances above zero (so that a batch funds only those invoices) */
    const holders = (userIds: ReadonlyArray<number>) =>
      userIds.length === 0
        ? Effect.succeed(new Set<string>() as ReadonlySet<string>)
        : holderRows([...new Set(userIds)]).pipe(
            Effect.map((rows) => new Set(rows.map((r) => `${r.user_id}:${r.currency}`)) as ReadonlySet<string>),
            Effect.orDie
          )

    /** [D109]: an admin's credit or debit, in a transaction of its own */
    const adjustNow = (entry: Parameters<typeof adjust>[0]) => sql.withTransaction(adjust(entry)).pipe(Effect.catchTag("SqlError", Effect.die))

    return { adjust, adjustNow, applyTo, holders, returnFrom, amountsOf, transactionsPage, ledgerSums } as const
  })
}) {
  /** issue 35: balances and ledger in memory (`BillingMemory.ts`) on the test's clock */
  static readonly Test: Layer.Layer<Balance, never, AppClock> = Layer.effect(
    Balance,
    Effect.map(AppClock, (clock) => Balance.make(memoryBalance(clock)))
  )
}
