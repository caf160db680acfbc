import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { JOBS_BATCH, JOBS_BATCH_MIN, JOBS_BATCH_TARGET_MS, nextBatchSize, runJobsOnce } from "../../src/jobs/Jobs.ts"
import { JOBS_PAUSE_DEFAULT, loadConfig } from "../../src/platform/Config.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { days, servicesFixtures } from "./services-fixtures.ts"

// Issue 27: the jobs of [D80] wait JOBS_PAUSE percent of each batch's time after it, so that a
// run of many due rows leaves the cores to requests; what a run does stays exactly the same.
const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(loadConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

describe("JOBS_PAUSE", () => {
  test("the share of a batch's time the jobs wait after it: 100 % by default, 0 for none", () => {
    expect(JOBS_PAUSE_DEFAULT).toBe(100)
    expect(Either.getOrThrow(load({})).jobsPausePercent).toBe(100)
    expect(Either.getOrThrow(load({ JOBS_PAUSE: "0" })).jobsPausePercent).toBe(0)
    expect(Either.getOrThrow(load({ JOBS_PAUSE: "300" })).jobsPausePercent).toBe(300)
  })

  test("a negative or non-integer pause stops start-up naming the variable", () => {
    expect(load({ JOBS_PAUSE: "-1" })).toEqual(Either.left("Invalid configuration: JOBS_PAUSE: must be an integer of at least 0"))
    expect(Either.isLeft(load({ JOBS_PAUSE: "half" }))).toBe(true)
  })
})

describe("batches sized by time", () => {
  test("the next batch aims at the target time, within JOBS_BATCH_MIN and JOBS_BATCH rows", () => {
    expect(nextBatchSize(100, JOBS_BATCH_TARGET_MS)).toBe(100)
    expect(nextBatchSize(100, JOBS_BATCH_TARGET_MS * 2)).toBe(50)
    expect(nextBatchSize(100, JOBS_BATCH_TARGET_MS / 2)).toBe(200)
    expect(nextBatchSize(400, 1)).toBe(JOBS_BATCH)
    expect(nextBatchSize(100, 10_000)).toBe(JOBS_BATCH_MIN)
  })
})

describe("a run with a pause after each batch", () => {
  let app: TestApp
  const start = new Date("2026-01-15T12:00:00.000Z")

  beforeAll(async () => {
    app = await makeTestApp({ config: { jobsPausePercent: 100 } })
  })
  afterAll(() => app.dispose())

  test("more due rows than two batches hold: all done, as the API shows, and the API answers while it runs", async () => {
    app.clock.set(start)
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Pro" })
    const cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "12.30", currency: "EUR" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const n = JOBS_BATCH * 2 + 7
    const services = await app.sql<{ id: number }>`
      insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
      select ${user.id}, ${planId}, ${cycleId}, 'active', ${days(start, -40)}, ${days(start, -1)}, false, ${start}
      from generate_series(1, ${n}) returning id`
    await app.sql`
      insert into invoices (user_id, plan_id, cycle_id, amount, currency, status, due_date, created_at)
      select ${user.id}, ${planId}, ${cycleId}, 12.30, 'EUR', 'pending', ${days(start, -1)}, ${days(start, -8)}
      from generate_series(1, ${n})`

    const running = app.run(runJobsOnce)
    // while the run works through its batches and pauses, a request is answered as usual
    // the typed client decodes only the declared 200
    const anonymous = await typedClient(app)
    const during = await ok(anonymous.catalog.listPlans())
    expect(Array.isArray(during)).toBe(true)
    const report = await running
    expect(report).toMatchObject({ skipped: false, expired: n, invoicesCancelled: n, renewalsCreated: 0 })

    for (const id of [services[0]!.id, services[JOBS_BATCH]!.id, services[n - 1]!.id]) {
      const res = await ok(me.services.getService({ path: { service: id } }))
      expect(res.status).toBe("expired")
    }
    const invoices = await ok(me.billing.listInvoices({ urlParams: {} }))
    expect(invoices.meta.total).toBe(n)
    expect(invoices.data.every((i) => i.status === "cancelled")).toBe(true)

    const again = await app.run(runJobsOnce)
    expect(again).toMatchObject({ skipped: false, expired: 0, invoicesCancelled: 0 })
  }, 60_000)
})
