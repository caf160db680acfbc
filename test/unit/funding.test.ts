import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Balance } from "../../src/billing/Balance.ts"
import { Funding } from "../../src/billing/Funding.ts"
import { Payments } from "../../src/billing/Payments.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { partialLayer } from "../../src/platform/TestLayer.ts"
import { it } from "../support/effect.ts"
import { UserId } from "../../src/platform/Ids.ts"

// Issue 35, the unit tier: [D109]'s funding of a new invoice from the balance, as an Effect
// program over `Funding.Test` (the balance in memory) and a `Payments` stand-in that records.

const paid: Array<{ readonly invoiceId: number; readonly gateway: string }> = []
const PaymentsTest = partialLayer(Payments, {
  markPaid: (invoiceId, options) => Effect.sync(() => (paid.push({ invoiceId, gateway: options.gateway }), "paid" as const))
})
const test = it.layer(Funding.Test.pipe(Layer.provideMerge(Layer.mergeAll(PaymentsTest, AppClock.Test().layer))))

const invoice = (id: number, amount: string, extra: { user_id?: UserId | null; status?: string; currency?: string } = {}) => ({
  id,
  user_id: UserId.make(1) as UserId | null,
  amount,
  currency: "USD",
  status: "pending",
  ...extra
})

const setUp = Effect.gen(function* () {
  paid.length = 0
  const balance = yield* Balance
  yield* balance.adjust({ userId: UserId.make(1), currency: "USD", cents: 1500, reason: "Gift", invoiceId: null })
  return { balance, funding: yield* Funding }
})

describe("Funding.fund [D109]", () => {
  test.effect("a balance that covers the invoice pays it with gateway balance, and is debited by its amount", () =>
    Effect.gen(function* () {
      const { balance, funding } = yield* setUp
      expect(yield* funding.fund(invoice(10, "9.99"))).toBe("paid")
      expect(paid).toEqual([{ invoiceId: 10, gateway: "balance" }])
      expect(yield* balance.amountsOf(UserId.make(1))).toEqual([{ currency: "USD", amount: "5.01" }])
      expect(yield* balance.ledgerSums(UserId.make(1))).toEqual([{ currency: "USD", amount: "5.01" }])
    })
  )

  test.effect("a balance short of the amount pays part: the invoice stays pending, the balance goes to 0.00", () =>
    Effect.gen(function* () {
      const { balance, funding } = yield* setUp
      expect(yield* funding.fund(invoice(11, "20.00"))).toBe("pending")
      expect(paid).toEqual([])
      expect(yield* balance.amountsOf(UserId.make(1))).toEqual([{ currency: "USD", amount: "0.00" }])
    })
  )

  test.effect("nothing is taken for another currency, a user gone, or an invoice not pending", () =>
    Effect.gen(function* () {
      const { balance, funding } = yield* setUp
      expect(yield* funding.fund(invoice(12, "1.00", { currency: "EUR" }))).toBe("pending")
      expect(yield* funding.fund(invoice(13, "1.00", { user_id: null }))).toBe("pending")
      expect(yield* funding.fund(invoice(14, "1.00", { status: "cancelled" }))).toBe("pending")
      expect(paid).toEqual([])
      expect(yield* balance.amountsOf(UserId.make(1))).toEqual([{ currency: "USD", amount: "15.00" }])
    })
  )
})
