import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Payments } from "../../src/billing/Payments.ts"
import { PlanChanges } from "../../src/billing/PlanChanges.ts"
import { changeKind, prorate } from "../../src/billing/Proration.ts"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { partialLayer, SqlClientTest } from "../../src/platform/TestLayer.ts"
import { Schedules } from "../../src/services/Schedule.ts"
import { Services } from "../../src/services/Services.ts"
import { Webhooks } from "../../src/webhooks/Webhooks.ts"
import { it } from "../support/effect.ts"
import { UserId } from "../../src/platform/Ids.ts"

// Issue 35, the unit tier: [D108]'s plan-change quote and its refusals as Effect programs over
// `PlanChanges.Test` (services, catalogue, invoices and balance in memory); the neighbours a
// quote never calls are empty stand-ins that throw if it does. Proration itself is pure.

const DAY = 86_400_000
const START = new Date("2026-05-01T00:00:00.000Z")
const clock = AppClock.Test(START)
const neighbours = Layer.mergeAll(
  clock.layer,
  DomainEvents.Test().layer,
  SqlClientTest,
  partialLayer(Schedules, {}),
  partialLayer(Payments, {}),
  partialLayer(Webhooks, {})
)
const test = it.layer(PlanChanges.Test.pipe(Layer.provideMerge(neighbours)))

const world = Effect.gen(function* () {
  clock.controls.set(START)
  const repo = yield* CatalogRepo
  const basic = yield* repo.createPlan({ name: "Basic" })
  const pro = yield* repo.createPlan({ name: "Pro" })
  const old = yield* repo.createPlan({ name: "Old", is_active: false })
  const basicMonthly = yield* repo.createCycle({ planId: basic.id, name: "Monthly", durationDays: 30, priceCents: 999, currency: "USD" })
  const basicEuro = yield* repo.createCycle({ planId: basic.id, name: "Monthly EUR", durationDays: 30, priceCents: 899, currency: "EUR" })
  const proMonthly = yield* repo.createCycle({ planId: pro.id, name: "Monthly", durationDays: 30, priceCents: 2000, currency: "USD" })
  const oldMonthly = yield* repo.createCycle({ planId: old.id, name: "Monthly", durationDays: 30, priceCents: 100, currency: "USD" })
  const services = yield* Services
  const onPro = yield* services.activate({ serviceId: null, userId: UserId.make(1), planId: pro.id, cycleId: proMonthly.id })
  return { basic, basicMonthly, basicEuro, pro, proMonthly, old, oldMonthly, onPro, services, changes: yield* PlanChanges }
})

describe("quote [D108]", () => {
  test.effect("a cheaper cycle per day is a downgrade: no credit, the new price due, effective at the period's end", () =>
    Effect.gen(function* () {
      const { basic, basicMonthly, changes, onPro } = yield* world
      clock.controls.advance(10 * DAY)
      expect(yield* changes.quote(UserId.make(1), onPro, { planId: basic.id, cycleId: basicMonthly.id })).toEqual({
        kind: "downgrade",
        credit: "0.00",
        amount_due: "9.99",
        currency: "USD",
        effective_at: new Date(START.getTime() + 30 * DAY)
      })
    })
  )

  test.effect("another user's service is 404; the same plan and cycle, another currency, an inactive plan: 422 naming the field", () =>
    Effect.gen(function* () {
      const { basic, basicEuro, changes, old, oldMonthly, onPro, pro, proMonthly } = yield* world
      expect((yield* Effect.flip(changes.quote(UserId.make(2), onPro, { planId: basic.id, cycleId: basicEuro.id })))._tag).toBe("NotFound")
      const refusal = (planId: number, cycleId: number) =>
        Effect.map(Effect.flip(changes.quote(UserId.make(1), onPro, { planId, cycleId })), (e) => (e._tag === "ValidationError" ? e.errors : e._tag))
      expect(yield* refusal(pro.id, proMonthly.id)).toEqual({ plan_id: ["The service is already on this plan and cycle."] })
      expect(yield* refusal(basic.id, basicEuro.id)).toEqual({ cycle_id: ["The cycle must be billed in USD, the currency of the current cycle."] })
      expect(yield* refusal(old.id, oldMonthly.id)).toEqual({ plan_id: ["The selected plan id is invalid."] })
    })
  )

  test.effect("a service past its expiry, or not active, cannot be changed (422 Service cannot be changed.)", () =>
    Effect.gen(function* () {
      const { basic, basicMonthly, changes, onPro, services } = yield* world
      const request = { planId: basic.id, cycleId: basicMonthly.id }
      clock.controls.advance(31 * DAY)
      const expired = yield* Effect.flip(changes.quote(UserId.make(1), onPro, request))
      expect(expired._tag === "BusinessRuleViolation" && expired.message).toBe("Service cannot be changed.")
      clock.controls.set(START)
      yield* services.update(onPro, { status: Option.some("suspended"), expiresAt: Option.none() })
      expect((yield* Effect.flip(changes.quote(UserId.make(1), onPro, request)))._tag).toBe("BusinessRuleViolation")
    })
  )
})

describe("proration [D108], pure", () => {
  test.effect("credit = paid x unused / period, rounded down; the excess above the new price goes to the balance", () =>
    Effect.sync(() => {
      const periodStart = new Date(START.getTime())
      const periodEnd = new Date(START.getTime() + 30 * DAY)
      const now = new Date(START.getTime() + 10 * DAY)
      expect(prorate({ paidCents: 999, periodStart, periodEnd, now, priceCents: 2000 })).toEqual({ creditCents: 666, amountDueCents: 1334, excessCents: 0 })
      expect(prorate({ paidCents: 3000, periodStart, periodEnd, now, priceCents: 1000 })).toEqual({ creditCents: 2000, amountDueCents: 0, excessCents: 1000 })
      expect(changeKind({ priceCents: 999, days: 30 }, { priceCents: 9999, days: 365 })).toBe("downgrade")
      expect(changeKind({ priceCents: 999, days: 30 }, { priceCents: 1000, days: 30 })).toBe("upgrade")
    })
  )
})
