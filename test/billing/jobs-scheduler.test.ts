import { afterAll, beforeAll, expect, test } from "bun:test"
import { Effect, Layer, TestClock, TestContext } from "effect"
import { ScheduledJobs } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { days, servicesFixtures } from "./services-fixtures.ts"

// [D80]: the scheduler that main.ts starts runs the jobs shortly after start, then every 60 s.
let app: TestApp
let fx: ReturnType<typeof servicesFixtures>

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
})
afterAll(() => app.dispose())

test("the scheduler runs the jobs shortly after start, then every 60 seconds", async () => {
  const planId = await fx.plan()
  const cycleId = await fx.cycle(planId)
  const user = await app.createUser()
  const now = app.clock.get()
  const first = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now, -1), autoRenew: false })
  const statusOf = (id: number) => Effect.promise(async () => (await app.sql<{ status: string }>`select status from services where id = ${id}`)[0]!.status)
  // the jobs' SQL runs on real time: give it a moment after moving the effect clock
  const settle = Effect.promise(() => Bun.sleep(300))

  const seen = await app.run(
    Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(ScheduledJobs)
        const beforeStart = yield* statusOf(first)
        yield* TestClock.adjust("5 seconds")
        yield* settle
        const afterFirstRun = yield* statusOf(first)

        const second = yield* Effect.promise(() => fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now, -1), autoRenew: false }))
        yield* TestClock.adjust("30 seconds")
        yield* settle
        const halfWay = yield* statusOf(second)
        yield* TestClock.adjust("30 seconds")
        yield* settle
        const afterSecondRun = yield* statusOf(second)
        return { beforeStart, afterFirstRun, halfWay, afterSecondRun }
      })
    ).pipe(Effect.provide(TestContext.TestContext))
  )

  expect(seen).toEqual({ beforeStart: "active", afterFirstRun: "expired", halfWay: "active", afterSecondRun: "expired" })
})
