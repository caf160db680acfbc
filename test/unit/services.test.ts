import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { SqlClientTest } from "../../src/platform/TestLayer.ts"
import { Services } from "../../src/services/Services.ts"
import { it } from "../support/effect.ts"
import { UserId } from "../../src/platform/Ids.ts"

// Issue 35, the unit tier: the services room's rules ([D35], [D80], [D101]) as Effect programs
// over `Services.Test` (the `services` table and the catalogue in memory); no HTTP, no database.

const DAY = 86_400_000
const clock = AppClock.Test(new Date("2026-03-01T00:00:00.000Z"))
const events = DomainEvents.Test()
const test = it.layer(Services.Test.pipe(Layer.provideMerge(Layer.mergeAll(clock.layer, events.layer, SqlClientTest))))

const world = Effect.gen(function* () {
  events.emitted.length = 0
  clock.controls.set(new Date("2026-03-01T00:00:00.000Z"))
  const repo = yield* CatalogRepo
  const plan = yield* repo.createPlan({ name: "Basic", trial_days: 3 })
  const other = yield* repo.createPlan({ name: "Other" })
  const monthly = yield* repo.createCycle({ planId: plan.id, name: "Monthly", durationDays: 30, priceCents: 999, currency: "USD" })
  const otherMonthly = yield* repo.createCycle({ planId: other.id, name: "Monthly", durationDays: 30, priceCents: 500, currency: "USD" })
  return { plan, other, monthly, otherMonthly, services: yield* Services }
})

const iso = (ms: number) => new Date(ms).toISOString()
const now = () => clock.controls.get().getTime()

describe("activate [D35]: a payment extends its own service, else the current one on the plan, else starts one", () => {
  test.effect("no service yet: a new active service from now for the cycle's days, with its service.activated", () =>
    Effect.gen(function* () {
      const { monthly, plan, services } = yield* world
      const period = yield* services.activatePeriod({ serviceId: null, userId: UserId.make(7), planId: plan.id, cycleId: monthly.id })
      expect([period.from.getTime(), period.to.getTime()]).toEqual([now(), now() + 30 * DAY])
      const current = yield* services.current(UserId.make(7))
      expect(Option.map(current, (s) => [s.id, s.status, s.plan.name, s.cycle.price])).toEqual(Option.some([period.serviceId, "active", "Basic", "9.99"]))
      expect(events.emitted).toEqual([
        {
          type: "service.activated",
          data: {
            id: period.serviceId,
            user_id: 7,
            plan_id: plan.id,
            cycle_id: monthly.id,
            status: "active",
            period_start: iso(now()),
            expires_at: iso(now() + 30 * DAY)
          }
        }
      ])
    })
  )

  test.effect("a second payment on the plan extends the current service from its expiry, not from now", () =>
    Effect.gen(function* () {
      const { monthly, plan, services } = yield* world
      const first = yield* services.activate({ serviceId: null, userId: UserId.make(7), planId: plan.id, cycleId: monthly.id })
      clock.controls.advance(10 * DAY)
      const second = yield* services.activatePeriod({ serviceId: null, userId: UserId.make(7), planId: plan.id, cycleId: monthly.id })
      expect(second.serviceId).toBe(first)
      expect(second.to.getTime()).toBe(new Date("2026-03-01T00:00:00.000Z").getTime() + 60 * DAY)
      expect((yield* services.listOf(UserId.make(7))).length).toBe(1)
    })
  )

  test.effect("a payment on another plan starts a second service; another user's service is never touched", () =>
    Effect.gen(function* () {
      const { monthly, other, otherMonthly, plan, services } = yield* world
      const mine = yield* services.activate({ serviceId: null, userId: UserId.make(7), planId: plan.id, cycleId: monthly.id })
      const theirs = yield* services.activate({ serviceId: null, userId: UserId.make(8), planId: plan.id, cycleId: monthly.id })
      const switched = yield* services.activate({ serviceId: null, userId: UserId.make(7), planId: other.id, cycleId: otherMonthly.id })
      expect(new Set([mine, theirs, switched]).size).toBe(3)
      // [D34]: the newest current service is the current one
      expect(Option.map(yield* services.current(UserId.make(7)), (s) => s.id)).toEqual(Option.some(switched))
      expect(yield* services.findOwned(UserId.make(8), mine)).toEqual(Option.none())
    })
  )

  test.effect("a trial's invoice paid extends the trial's own service from its expiry; an expired one from now", () =>
    Effect.gen(function* () {
      const { monthly, plan, services } = yield* world
      const trial = yield* services.startTrial({ userId: UserId.make(7), plan, cycle: monthly })
      expect(trial.expiresAt.getTime()).toBe(now() + 3 * DAY)
      const paid = yield* services.activatePeriod({ serviceId: trial.id, userId: UserId.make(7), planId: plan.id, cycleId: monthly.id })
      expect([paid.serviceId, paid.from.getTime(), paid.to.getTime()]).toEqual([trial.id, now() + 3 * DAY, now() + 33 * DAY])

      const late = yield* services.startTrial({ userId: UserId.make(9), plan, cycle: monthly })
      clock.controls.advance(5 * DAY)
      const revived = yield* services.activatePeriod({ serviceId: late.id, userId: UserId.make(9), planId: plan.id, cycleId: monthly.id })
      expect([revived.from.getTime(), revived.to.getTime()]).toEqual([now(), now() + 30 * DAY])
      expect(events.emitted.map((e) => e.type)).toEqual(["service.activated", "service.activated", "service.activated", "service.activated"])
    })
  )
})

describe("expireDue [D80] and an admin's update [D101]", () => {
  test.effect("services past expires_at become expired, each with service.expired; the others stay", () =>
    Effect.gen(function* () {
      const { monthly, plan, services } = yield* world
      const short = yield* services.startTrial({ userId: UserId.make(1), plan, cycle: monthly })
      const long = yield* services.activate({ serviceId: null, userId: UserId.make(2), planId: plan.id, cycleId: monthly.id })
      clock.controls.advance(4 * DAY)
      events.emitted.length = 0
      const expired = yield* services.expireDue(100)
      expect(expired.map((r) => r.id)).toEqual([short.id])
      expect(events.emitted.map((e) => [e.type, "id" in e.data ? e.data.id : null])).toEqual([["service.expired", short.id]])
      expect(Option.map(yield* services.findById(long), (s) => s.status)).toEqual(Option.some("active"))
      expect(yield* services.current(UserId.make(1))).toEqual(Option.none())
    })
  )

  test.effect("suspending emits service.suspended once (not again when already suspended), then wakes the sender", () =>
    Effect.gen(function* () {
      const { monthly, plan, services } = yield* world
      const id = yield* services.activate({ serviceId: null, userId: UserId.make(3), planId: plan.id, cycleId: monthly.id })
      events.emitted.length = 0
      const wakes = events.counts.wakes
      const suspend = services.update(id, { status: Option.some("suspended"), expiresAt: Option.none() })
      expect(Option.map(yield* suspend, (s) => s.status)).toEqual(Option.some("suspended"))
      yield* suspend
      expect(events.emitted.map((e) => e.type)).toEqual(["service.suspended"])
      expect(events.counts.wakes).toBe(wakes + 2)
      expect(yield* services.update(999, { status: Option.some("active"), expiresAt: Option.none() })).toEqual(Option.none())
    })
  )
})
