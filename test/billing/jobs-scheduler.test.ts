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
  /** the status once it is `status`, or the last one seen in 10 s of real time (a busy machine's run starts later) */
  const statusBecomes = (id: number, status: string) =>
    Effect.promise(async () => {
      let seen = ""
      for (let i = 0; i < 200; i++) {
        seen = (await app.sql<{ status: string }>`select status from services where id = ${id}`)[0]!.status
        if (seen === status) break
        await Bun.sleep(50)
      }
      return seen
    })

  const seen = await app.run(
    Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(ScheduledJobs)
        const beforeStart = yield* statusOf(first)
        yield* TestClock.adjust("5 seconds")
        const afterFirstRun = yield* statusBecomes(first, "expired")
        // and the run's last steps, so that the next one is timed from its end (Schedule.spaced)
        yield* settle

        const second = yield* Effect.promise(() => fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now, -1), autoRenew: false }))
        yield* TestClock.adjust("30 seconds")
        yield* settle
        const halfWay = yield* statusOf(second)
        yield* TestClock.adjust("30 seconds")
        const afterSecondRun = yield* statusBecomes(second, "expired")
        return { beforeStart, afterFirstRun, halfWay, afterSecondRun }
      })
    ).pipe(Effect.provide(TestContext.TestContext))
  )

  expect(seen).toEqual({ beforeStart: "active", afterFirstRun: "expired", halfWay: "active", afterSecondRun: "expired" })
})
