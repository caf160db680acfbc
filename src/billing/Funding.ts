import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { AppClock } from "../platform/Clock.ts"
import { Balance } from "./Balance.ts"
import { Payments } from "./Payments.ts"
import { UserId } from "../platform/Ids.ts"

/**
 * [D109]: a new invoice (an order, a renewal, a plan change) takes what it can from its user's
 * balance; an invoice the balance covers whole is paid at once with gateway `balance` and
 * activates like any payment. Run `fund` in the transaction that made the invoice: the balance
 * row stays locked until it commits, so two invoices never spend the same money.
 */
export class Funding extends Effect.Service<Funding>()("billing/Funding", {
  effect: Effect.gen(function* () {
    const balance = yield* Balance
    const payments = yield* Payments

    const fund = (invoice: {
      readonly id: number
      readonly user_id: UserId | null
      readonly amount: string
      readonly currency: string
      readonly status: string
    }) =>
      Effect.gen(function* () {
        if (invoice.user_id === null || invoice.status !== "pending") return "pending" as const
        const applied = yield* balance.applyTo({ id: invoice.id, userId: invoice.user_id, amount: invoice.amount, currency: invoice.currency })
        if (applied.appliedCents === 0 || applied.leftCents > 0) return "pending" as const
        yield* Effect.orDie(payments.markPaid(invoice.id, { transactionId: null, gateway: "balance" }))
        return "paid" as const
      })

    return { fund } as const
  }),
  dependencies: [Balance.Default, Payments.Default]
}) {
  /** issue 35: the rule over `Balance.Test` (given to the test too); `Payments` is the test's */
  static readonly Test: Layer.Layer<Funding | Balance, never, Payments | AppClock> = Funding.DefaultWithoutDependencies.pipe(Layer.provideMerge(Balance.Test))
}
