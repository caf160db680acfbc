import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../../src/accounts/Users.ts"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { SqlClientTest } from "../../src/platform/TestLayer.ts"
import { ServiceGrants } from "../../src/services/Grants.ts"
import { it } from "../support/effect.ts"
import { UserId } from "../../src/platform/Ids.ts"

// Issue 35, the unit tier: an admin's grant of a service ([D70], [D11]) as an Effect program
// over `ServiceGrants.Test` (services, catalogue and users in memory).

const DAY = 86_400_000
const START = new Date("2026-06-01T00:00:00.000Z")
const clock = AppClock.Test(START)
const test = it.layer(ServiceGrants.Test.pipe(Layer.provideMerge(Layer.mergeAll(clock.layer, DomainEvents.Test().layer, SqlClientTest))))

const world = Effect.gen(function* () {
  clock.controls.set(START)
  const repo = yield* CatalogRepo
  const retired = yield* repo.createPlan({ name: "Retired", is_active: false })
  const quarterly = yield* repo.createCycle({ planId: retired.id, name: "Quarterly", durationDays: 90, priceCents: 2500, currency: "USD" })
  const user = yield* Effect.orDie(Effect.flatMap(Users, (users) => users.insert({ name: "G", email: "granted@example.test", passwordHash: "x", now: START })))
  return { retired, quarterly, user, grants: yield* ServiceGrants }
})

const none = { status: Option.none(), startsAt: Option.none(), expiresAt: Option.none(), autoRenew: Option.none() }

describe("ServiceGrants.grant [D70]", () => {
  test.effect("any plan, also an inactive one: active from now for the cycle's length, not renewing ([D124]) unless told otherwise", () =>
    Effect.gen(function* () {
      const { grants, quarterly, retired, user } = yield* world
      const granted = yield* grants.grant(user.id, { planId: retired.id, cycleId: quarterly.id, ...none })
      expect(granted).toMatchObject({ userId: user.id, status: "active", autoRenew: false, plan: { name: "Retired" }, cycle: { durationDays: 90 } })
      expect([granted.startsAt.getTime(), granted.expiresAt.getTime()]).toEqual([START.getTime(), START.getTime() + 90 * DAY])

      const told = yield* grants.grant(user.id, {
        planId: retired.id,
        cycleId: quarterly.id,
        status: Option.some("suspended"),
        startsAt: Option.some(new Date(START.getTime() + DAY)),
        expiresAt: Option.some(new Date(START.getTime() + 2 * DAY)),
        autoRenew: Option.some(false)
      })
      expect(told).toMatchObject({ status: "suspended", autoRenew: false })
      expect(told.expiresAt.getTime()).toBe(START.getTime() + 2 * DAY)
    })
  )

  test.effect("an end not after the start is 422 errors.expires_at; [D11]: field errors come before an unknown user's 404", () =>
    Effect.gen(function* () {
      const { grants, quarterly, retired, user } = yield* world
      const early = yield* Effect.flip(grants.grant(user.id, { planId: retired.id, cycleId: quarterly.id, ...none, expiresAt: Option.some(START) }))
      expect(early._tag === "ValidationError" && early.errors).toEqual({ expires_at: ["The expires at field must be a date after starts at."] })
      const both = yield* Effect.flip(grants.grant(UserId.make(9999), { planId: retired.id, cycleId: 9999, ...none }))
      expect(both._tag === "ValidationError" && both.errors).toEqual({ cycle_id: ["The selected cycle id is invalid."] })
      expect((yield* Effect.flip(grants.grant(UserId.make(9999), { planId: retired.id, cycleId: quarterly.id, ...none })))._tag).toBe("NotFound")
    })
  )
})
