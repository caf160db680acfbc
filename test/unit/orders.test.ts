import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../../src/accounts/Users.ts"
import { Balance } from "../../src/billing/Balance.ts"
import { Invoices } from "../../src/billing/Invoices.ts"
import { Orders } from "../../src/billing/Orders.ts"
import { Payments } from "../../src/billing/Payments.ts"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { partialLayer, SqlClientTest } from "../../src/platform/TestLayer.ts"
import { Services } from "../../src/services/Services.ts"
import { it } from "../support/effect.ts"
import { UserId } from "../../src/platform/Ids.ts"

// Issue 35, the unit tier: placing and cancelling orders ([D33], [D35], [D36], [D37], [D109],
// [D112]) as Effect programs over `Orders.Test` (invoices, users, trial claims, balance, services
// and catalogue in memory); `Payments` is a stand-in that records what it was asked to pay.

const DAY = 86_400_000
const START = new Date("2026-04-01T12:00:00.000Z")
const clock = AppClock.Test(START)
const events = DomainEvents.Test()
const markedPaid: Array<{ readonly invoiceId: number; readonly gateway: string }> = []
const PaymentsTest = partialLayer(Payments, {
  markPaid: (invoiceId, options) => Effect.sync(() => (markedPaid.push({ invoiceId, gateway: options.gateway }), "paid" as const))
})
const test = it.layer(Orders.Test.pipe(Layer.provideMerge(Layer.mergeAll(clock.layer, events.layer, PaymentsTest, SqlClientTest))))

const world = Effect.gen(function* () {
  clock.controls.set(START)
  events.emitted.length = 0
  markedPaid.length = 0
  const repo = yield* CatalogRepo
  const users = yield* Users
  const plain = yield* repo.createPlan({ name: "Plain" })
  const trialPlan = yield* repo.createPlan({ name: "Trial", trial_days: 5 })
  const plainMonthly = yield* repo.createCycle({ planId: plain.id, name: "Monthly", durationDays: 30, priceCents: 1000, currency: "EUR" })
  const trialMonthly = yield* repo.createCycle({ planId: trialPlan.id, name: "Monthly", durationDays: 30, priceCents: 1500, currency: "EUR" })
  const user = (email: string, verified = true) =>
    Effect.orDie(users.insert({ name: "U", email, passwordHash: "x", verifiedAt: verified ? START : null, now: START }))
  return { plain, plainMonthly, trialPlan, trialMonthly, user, orders: yield* Orders, repo }
})

const order = (planId: number, cycleId: number, promo?: string, gateway?: string) => ({
  planId,
  cycleId,
  promoCode: Option.fromNullable(promo),
  gateway
})

describe("place [D35] [D36]", () => {
  test.effect("a pending invoice of the cycle's price, due in 7 days, on the manual gateway; invoice.created, then a wake", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, user } = yield* world
      const buyer = yield* user("buyer@example.test")
      const wakes = events.counts.wakes
      const invoice = yield* orders.place(buyer.id, order(plain.id, plainMonthly.id))
      expect(invoice).toMatchObject({
        amount: "10.00",
        discount: "0.00",
        currency: "EUR",
        status: "pending",
        gateway: "manual",
        promo_code: null,
        plan: { name: "Plain" },
        cycle: { name: "Monthly", duration_days: 30 }
      })
      expect(invoice.due_date.getTime()).toBe(START.getTime() + 7 * DAY)
      expect(events.emitted.map((e) => e.type)).toEqual(["invoice.created"])
      expect(events.counts.wakes).toBe(wakes + 1)
      expect(yield* Effect.flatMap(Services, (s) => s.current(buyer.id))).toEqual(Option.none())
    })
  )

  test.effect("a trial plan for a verified address starts an active service at once, the invoice due at the trial's end", () =>
    Effect.gen(function* () {
      const { orders, trialMonthly, trialPlan, user } = yield* world
      const buyer = yield* user("Trial@Example.test")
      const invoice = yield* orders.place(buyer.id, order(trialPlan.id, trialMonthly.id))
      expect(invoice.due_date.getTime()).toBe(START.getTime() + 5 * DAY)
      const service = yield* Effect.flatMap(Services, (s) => s.current(buyer.id))
      expect(Option.map(service, (s) => [s.status, s.expiresAt.getTime()])).toEqual(Option.some(["active", START.getTime() + 5 * DAY]))
      const stored = yield* Effect.flatMap(Invoices, (i) => i.byUuid(invoice.uuid))
      expect(Option.map(stored, (i) => i.service_id)).toEqual(Option.map(service, (s) => s.id))
      expect(events.emitted.map((e) => e.type)).toEqual(["service.activated", "invoice.created"])
    })
  )

  test.effect("[D35] rev. 2: one trial per address ever (in any case); none for an unverified address", () =>
    Effect.gen(function* () {
      const { orders, trialMonthly, trialPlan, user } = yield* world
      const first = yield* user("once@example.test")
      yield* orders.place(first.id, order(trialPlan.id, trialMonthly.id))
      // the account is deleted and the address registered again, in other case: no second trial
      yield* Effect.flatMap(Users, (users) => users.delete(first.id))
      const again = yield* user("ONCE@example.test")
      const noSecond = yield* orders.place(again.id, order(trialPlan.id, trialMonthly.id))
      expect(noSecond.due_date.getTime()).toBe(START.getTime() + 7 * DAY)
      expect(yield* Effect.flatMap(Services, (s) => s.current(again.id))).toEqual(Option.none())
      const unverified = yield* user("fresh@example.test", false)
      const noTrial = yield* orders.place(unverified.id, order(trialPlan.id, trialMonthly.id))
      expect(noTrial.due_date.getTime()).toBe(START.getTime() + 7 * DAY)
      expect(yield* Effect.flatMap(Services, (s) => s.current(unverified.id))).toEqual(Option.none())
    })
  )

  test.effect("[D33]: a promo discounts the invoice and counts one use; the caller's own uses meet max_uses_per_user", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, repo, user } = yield* world
      yield* repo.insertPromo({ code: "TENOFF", type: "percentage", value: 1000, expiresAt: null, maxUses: null, maxUsesPerUser: 1, planIds: [] })
      const buyer = yield* user("promo@example.test")
      const invoice = yield* orders.place(buyer.id, order(plain.id, plainMonthly.id, "tenoff"))
      expect(invoice).toMatchObject({ amount: "9.00", discount: "1.00", promo_code: "tenoff" })
      const refused = yield* Effect.flip(orders.place(buyer.id, order(plain.id, plainMonthly.id, "TENOFF")))
      expect(refused._tag === "PromoInvalid" && refused.message).toBe("Invalid or expired promo code.")
      // another buyer may still use it
      const other = yield* user("promo2@example.test")
      expect((yield* orders.place(other.id, order(plain.id, plainMonthly.id, "TENOFF"))).amount).toBe("9.00")
    })
  )

  test.effect("[D112]: an unknown gateway is 422 errors.gateway; an unknown user is 404; an inactive choice 422 errors.plan_id", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, repo, user } = yield* world
      const buyer = yield* user("gw@example.test")
      const badGateway = yield* Effect.flip(orders.place(buyer.id, order(plain.id, plainMonthly.id, undefined, "paypal")))
      expect(badGateway._tag === "ValidationError" && badGateway.errors).toEqual({ gateway: ["The selected gateway is invalid."] })
      expect((yield* Effect.flip(orders.place(UserId.make(4242), order(plain.id, plainMonthly.id))))._tag).toBe("NotFound")
      yield* repo.updatePlan(plain.id, { is_active: false })
      const inactive = yield* Effect.flip(orders.place(buyer.id, order(plain.id, plainMonthly.id)))
      expect(inactive._tag === "ValidationError" && inactive.errors).toEqual({ plan_id: ["The selected plan id is invalid."] })
      expect(events.emitted).toEqual([])
    })
  )

  test.effect("[D109]: a balance that covers the invoice pays it through `balance`; one that does not leaves it pending", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, user } = yield* world
      const balance = yield* Balance
      const rich = yield* user("rich@example.test")
      const poor = yield* user("poor@example.test")
      yield* balance.adjust({ userId: rich.id, currency: "EUR", cents: 2500, reason: "Gift", invoiceId: null })
      yield* balance.adjust({ userId: poor.id, currency: "EUR", cents: 300, reason: "Gift", invoiceId: null })
      const paid = yield* orders.place(rich.id, order(plain.id, plainMonthly.id))
      const pending = yield* orders.place(poor.id, order(plain.id, plainMonthly.id))
      expect(markedPaid).toEqual([{ invoiceId: paid.id, gateway: "balance" }])
      expect(yield* balance.amountsOf(rich.id)).toEqual([{ currency: "EUR", amount: "15.00" }])
      expect(yield* balance.amountsOf(poor.id)).toEqual([{ currency: "EUR", amount: "0.00" }])
      expect(pending.status).toBe("pending")
    })
  )
})

describe("cancel, owned and paymentLink [D11] [D33] [D37]", () => {
  test.effect("a pending invoice is cancelled once, its promo use given back; a second cancel is 422 Invoice is not payable.", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, repo, user } = yield* world
      yield* repo.insertPromo({ code: "ONLYONE", type: "fixed", value: 200, expiresAt: null, maxUses: 1, maxUsesPerUser: null, planIds: [] })
      const buyer = yield* user("cancel@example.test")
      const invoice = yield* orders.place(buyer.id, order(plain.id, plainMonthly.id, "ONLYONE"))
      const other = yield* user("next@example.test")
      expect((yield* Effect.flip(orders.place(other.id, order(plain.id, plainMonthly.id, "ONLYONE"))))._tag).toBe("PromoInvalid")

      const cancelled = yield* orders.cancel(buyer.id, invoice.uuid)
      expect(cancelled.status).toBe("cancelled")
      const again = yield* Effect.flip(orders.cancel(buyer.id, invoice.uuid))
      expect(again._tag === "InvoiceNotPayable" && again.message).toBe("Invoice is not payable.")
      // the use came back: the next buyer gets the code
      expect((yield* orders.place(other.id, order(plain.id, plainMonthly.id, "ONLYONE"))).amount).toBe("8.00")
    })
  )

  test.effect("another user's invoice is 404 for owned, cancel and paymentLink; the owner gets the gateway's link", () =>
    Effect.gen(function* () {
      const { orders, plain, plainMonthly, user } = yield* world
      const owner = yield* user("owner@example.test")
      const stranger = yield* user("stranger@example.test")
      const invoice = yield* orders.place(owner.id, order(plain.id, plainMonthly.id))
      const refused = yield* Effect.all([
        Effect.flip(orders.owned(stranger.id, invoice.uuid)),
        Effect.flip(orders.cancel(stranger.id, invoice.uuid)),
        Effect.flip(orders.paymentLink(stranger.id, invoice.uuid))
      ])
      expect(refused.map((e) => e._tag)).toEqual(["NotFound", "NotFound", "NotFound"])
      const link = yield* orders.paymentLink(owner.id, invoice.uuid)
      expect(link).toEqual({ url: `https://pay.example.test/${invoice.uuid}`, expiresAt: new Date(START.getTime() + 30 * 60_000), gateway: "manual" })
      yield* orders.cancel(owner.id, invoice.uuid)
      expect((yield* Effect.flip(orders.paymentLink(owner.id, invoice.uuid)))._tag).toBe("InvoiceNotPayable")
    })
  )
})
