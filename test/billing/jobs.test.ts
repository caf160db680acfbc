import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import pg from "pg"
import { JOBS_BATCH, JOBS_LOCK_KEY, runJobsOnce } from "../../src/jobs/Jobs.ts"
import { sharedDatabase } from "../support/database.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, days, servicesFixtures } from "./services-fixtures.ts"

// [D80]: expiry, renewal invoices for auto-renew services, cancellation of overdue invoices.
let app: TestApp
let fx: ReturnType<typeof servicesFixtures>
let planId: number
let cycleId: number
const start = new Date("2026-01-15T12:00:00.000Z")

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
  planId = await fx.plan({ name: "Pro" })
  cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "12.30", currency: "EUR" })
})
afterAll(() => app.dispose())

const now = () => app.clock.get()
const run = () => app.run(runJobsOnce)

const statusOf = async (token: string, id: number) => {
  const me = await typedClient(app, { token })
  return (await ok(me.services.getService({ path: { service: id } }))).status
}

const renewalsOf = (serviceId: number) =>
  app.sql<{
    user_id: number
    plan_id: number
    cycle_id: number
    amount: string
    discount: string
    currency: string
    status: string
    gateway: string
    due_date: Date
    renewal_of_expiry: Date
    promo_code_id: number | null
  }>`select user_id, plan_id, cycle_id, amount::text as amount, discount::text as discount, currency, status, gateway,
            due_date, renewal_of_expiry, promo_code_id
     from invoices where service_id = ${serviceId} order by id`

describe("expiry", () => {
  test("active and suspended services past expires_at become expired; others are left alone", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const pastActive = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), -1), autoRenew: false })
    const pastSuspended = await fx.service({ userId: user.id, planId, cycleId, status: "suspended", expiresAt: new Date(now().getTime() - 1000) })
    const atExpiry = await fx.service({ userId: user.id, planId, cycleId, expiresAt: now(), autoRenew: false })
    const live = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 20) })
    const cancelled = await fx.service({ userId: user.id, planId, cycleId, status: "cancelled", expiresAt: days(now(), -1) })
    const pending = await fx.service({ userId: user.id, planId, cycleId, status: "pending", expiresAt: days(now(), -1) })

    const report = await run()
    expect(report.skipped).toBe(false)
    expect(report.expired).toBe(3)
    expect(await statusOf(user.token, pastActive)).toBe("expired")
    expect(await statusOf(user.token, pastSuspended)).toBe("expired")
    expect(await statusOf(user.token, atExpiry)).toBe("expired")
    expect(await statusOf(user.token, live)).toBe("active")
    expect(await statusOf(user.token, cancelled)).toBe("cancelled")
    expect(await statusOf(user.token, pending)).toBe("pending")

    // a second run changes nothing
    expect((await run()).expired).toBe(0)
    expect(await statusOf(user.token, live)).toBe("active")
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.services.currentService())).id).toBe(live)
  })

  test("a service expires when the clock passes its expiry", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 10), autoRenew: false })
    await run()
    expect(await statusOf(user.token, id)).toBe("active")
    app.clock.advance(10 * DAY + 1)
    await run()
    expect(await statusOf(user.token, id)).toBe("expired")
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
  })
})

describe("renewal invoices", () => {
  test("an auto-renew service expiring within 3 days gets one pending renewal invoice, even when run twice", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const expiresAt = days(now(), 5)
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt })

    await run()
    expect(await renewalsOf(id)).toHaveLength(0) // 5 days out: too early

    app.clock.advance(2 * DAY + 60_000) // now 2 days 23:59 before expiry
    const first = await run()
    expect(first.renewalsCreated).toBe(1)
    const second = await run()
    expect(second.renewalsCreated).toBe(0)
    app.clock.advance(DAY)
    await run()

    const invoices = await renewalsOf(id)
    expect(invoices).toHaveLength(1)
    expect(invoices[0]).toEqual({
      user_id: user.id,
      plan_id: planId,
      cycle_id: cycleId,
      amount: "12.30",
      discount: "0.00",
      currency: "EUR",
      status: "pending",
      gateway: "manual",
      due_date: expiresAt,
      renewal_of_expiry: expiresAt,
      promo_code_id: null
    })
    expect(await statusOf(user.token, id)).toBe("active")
  })

  test("two runs at once create one renewal invoice", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 1) })
    const reports = await Promise.all([run(), run()])
    expect(reports.reduce((sum, r) => sum + r.renewalsCreated, 0)).toBe(1)
    expect(await renewalsOf(id)).toHaveLength(1)
  })

  test("a service whose expiry moved (renewal paid) gets the next renewal once", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 2) })
    await run()
    expect(await renewalsOf(id)).toHaveLength(1)
    await app.sql`update invoices set status = 'paid', paid_at = ${now()} where service_id = ${id}`
    await app.sql`update services set expires_at = ${days(now(), 32)} where id = ${id}`
    app.clock.advance(30 * DAY)
    await run()
    await run()
    const invoices = await renewalsOf(id)
    expect(invoices.map((i) => [i.status, i.renewal_of_expiry.toISOString()])).toEqual([
      ["paid", days(start, 2).toISOString()],
      ["pending", days(start, 32).toISOString()]
    ])
  })

  test("no renewal for a service without auto-renew, nor for a suspended, cancelled or expired one", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const manual = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 1), autoRenew: false })
    const suspended = await fx.service({ userId: user.id, planId, cycleId, status: "suspended", expiresAt: days(now(), 1) })
    const cancelled = await fx.service({ userId: user.id, planId, cycleId, status: "cancelled", expiresAt: days(now(), 1) })
    const expired = await fx.service({ userId: user.id, planId, cycleId, status: "expired", expiresAt: days(now(), 1) })
    await run()
    for (const id of [manual, suspended, cancelled, expired]) expect(await renewalsOf(id)).toHaveLength(0)
  })

  test("turning auto-renew off through the API stops the renewal invoice", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 2) })
    const me = await typedClient(app, { token: user.token })
    const off = await ok(me.services.setAutoRenew({ path: { service: id }, payload: { auto_renew: false } }))
    expect(off.data.auto_renew).toBe(false)
    await run()
    expect(await renewalsOf(id)).toHaveLength(0)
    await ok(me.services.setAutoRenew({ path: { service: id }, payload: { auto_renew: true } }))
    await run()
    expect(await renewalsOf(id)).toHaveLength(1)
  })
})

describe("overdue invoices", () => {
  const promo = async (uses: number) => {
    const [row] = await app.sql<{ id: number }>`
      insert into promo_codes (code, type, value, max_uses, uses)
      values (${`P${Math.random().toString(36).slice(2, 10)}`}, 'percentage', 10, 5, ${uses}) returning id`
    return row!.id
  }
  const usesOf = async (promoId: number) => (await app.sql<{ uses: number }>`select uses from promo_codes where id = ${promoId}`)[0]!.uses
  const invoice = async (fields: { userId: number; status?: string; dueDate: Date; promoId?: number }) => {
    const status = fields.status ?? "pending"
    const [row] = await app.sql<{ id: number }>`
      insert into invoices (user_id, plan_id, cycle_id, amount, discount, currency, status, promo_code, promo_code_id, due_date, paid_at)
      values (${fields.userId}, ${planId}, ${cycleId}, '11.07', '1.23', 'EUR', ${status},
              ${fields.promoId ? "SAVE10" : null}, ${fields.promoId ?? null}, ${fields.dueDate},
              ${status === "paid" ? now() : null})
      returning id`
    return row!.id
  }
  const invoiceStatus = async (id: number) => (await app.sql<{ status: string }>`select status from invoices where id = ${id}`)[0]!.status

  test("pending invoices past due_date are cancelled and give their promo use back exactly once", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const promoId = await promo(2)
    const overdue = await invoice({ userId: user.id, dueDate: days(now(), -1), promoId })
    const overdueNoPromo = await invoice({ userId: user.id, dueDate: new Date(now().getTime() - 1000) })
    const notYetDue = await invoice({ userId: user.id, dueDate: days(now(), 1), promoId })
    const paid = await invoice({ userId: user.id, status: "paid", dueDate: days(now(), -3), promoId })

    const report = await run()
    expect(report.invoicesCancelled).toBe(2)
    expect(report.promoUsesReleased).toBe(1)
    expect(await invoiceStatus(overdue)).toBe("cancelled")
    expect(await invoiceStatus(overdueNoPromo)).toBe("cancelled")
    expect(await invoiceStatus(notYetDue)).toBe("pending")
    expect(await invoiceStatus(paid)).toBe("paid")
    expect(await usesOf(promoId)).toBe(1)

    // run again, and twice at once: the use is not given back again
    await run()
    await Promise.all([run(), run()])
    expect(await usesOf(promoId)).toBe(1)
    expect(await invoiceStatus(overdue)).toBe("cancelled")

    // the next one falls due later and gives its own use back
    app.clock.advance(2 * DAY)
    await Promise.all([run(), run()])
    expect(await invoiceStatus(notYetDue)).toBe("cancelled")
    expect(await usesOf(promoId)).toBe(0)
  })

  test("an unpaid renewal invoice is cancelled after its due date, when the service has expired", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 1) })
    await run()
    expect((await renewalsOf(id))[0]!.status).toBe("pending")
    app.clock.advance(DAY + 1000)
    await run()
    // [D124]: an auto-renewing service is in grace until the last retry (5 days), its invoice payable
    expect(await statusOf(user.token, id)).toBe("grace")
    expect((await renewalsOf(id))[0]!.status).toBe("pending")
    app.clock.advance(5 * DAY)
    await run()
    expect(await statusOf(user.token, id)).toBe("expired")
    const invoices = await renewalsOf(id)
    expect(invoices.map((i) => i.status)).toEqual(["cancelled"])
  })
})

describe("one run at a time", () => {
  // On PGlite every client shares one session (advisory locks are re-entrant there); the
  // lock can only be held by "another instance" on a real PostgreSQL (CI: TEST_DATABASE_URL).
  test.skipIf(!process.env["TEST_DATABASE_URL"])("a run skips while another instance holds the jobs lock", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), -1), autoRenew: false })
    const shared = await sharedDatabase()
    const other = new pg.Client({ connectionString: shared.url })
    await other.connect()
    try {
      await other.query("begin")
      await other.query("select pg_advisory_xact_lock($1)", [JOBS_LOCK_KEY])
      const report = await run()
      expect(report).toEqual({ skipped: true, expired: 0, renewalsCreated: 0, invoicesCancelled: 0, promoUsesReleased: 0 })
      expect(await statusOf(user.token, id)).toBe("active")
      await other.query("commit")
      expect((await run()).skipped).toBe(false)
      expect(await statusOf(user.token, id)).toBe("expired")
    } finally {
      await other.end()
    }
  })
})

describe("batches [D80] (rev. 2)", () => {
  test("more due rows than one batch holds: one run does them all, batch by batch; a second run finds nothing", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const n = JOBS_BATCH * 2 + 7
    await app.sql`
      insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
      select ${user.id}, ${planId}, ${cycleId}, 'active', ${days(now(), -40)}, ${days(now(), -1)}, false, ${now()}
      from generate_series(1, ${n})`
    await app.sql`
      insert into invoices (user_id, plan_id, cycle_id, amount, currency, status, due_date, created_at)
      select ${user.id}, ${planId}, ${cycleId}, 12.30, 'EUR', 'pending', ${days(now(), -1)}, ${days(now(), -8)}
      from generate_series(1, ${n})`
    const first = await run()
    expect(first.expired).toBe(n)
    expect(first.invoicesCancelled).toBe(n)
    const left = await app.sql<{ n: number }>`
      select count(*)::int as n from services where user_id = ${user.id} and status = 'active'`
    expect(left[0]!.n).toBe(0)
    const second = await run()
    expect(second).toMatchObject({ skipped: false, expired: 0, invoicesCancelled: 0 })
    // batches sized by time with a pause after each (issue 27): many small ones on a slow machine
  }, 60_000)
})
