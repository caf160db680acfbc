import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { days, servicesFixtures } from "./services-fixtures.ts"

// Issue 27: the authenticated reads of `bun run bench` made cheaper keep their answers byte for
// byte (key order included) and their headers; a revoked token is refused on the next request [D4].
let app: TestApp
let fx: ReturnType<typeof servicesFixtures>
let planId: number
let cycleId: number
let cheapPlan: number
let cheapCycle: number

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
  planId = await fx.plan({ name: "Pro", bandwidth: 500, speed: 100 })
  cycleId = await fx.cycle(planId, { name: "Quarterly", days: 90, price: "24.5", currency: "EUR" })
  cheapPlan = await fx.plan({ name: "Lite", bandwidth: 0, speed: null })
  cheapCycle = await fx.cycle(cheapPlan, { name: "Monthly", days: 30, price: "3", currency: "EUR" })
})
afterAll(() => app.dispose())

const now = () => app.clock.get()

const detail = (id: number, expiresAt: Date, schedule: { cancel_at: string | null; scheduled_change: unknown }) =>
  JSON.stringify({
    success: true,
    data: {
      id,
      plan: { id: planId, name: "Pro", bandwidth_limit_gb: 500, speed_limit_mbps: 100 },
      cycle: { id: cycleId, name: "Quarterly", duration_days: 90, price: "24.50", currency: "EUR" },
      status: "active",
      starts_at: now().toISOString(),
      expires_at: expiresAt.toISOString(),
      auto_renew: false,
      grace_until: null,
      cancel_at: schedule.cancel_at,
      scheduled_change: schedule.scheduled_change
    }
  })

describe("services: the current one, one by id, the list (issue 27, [D34], [D108], [D111])", () => {
  test("without a schedule: the same bytes and headers", async () => {
    const user = await app.createUser()
    const expiresAt = days(now(), 30)
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt, autoRenew: false })
    const res = await app.get("/v1/services/current", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/json")
    expect(res.text).toBe(detail(id, expiresAt, { cancel_at: null, scheduled_change: null }))
    const one = await app.get(`/v1/services/${id}`, { token: user.token })
    expect(one.text).toBe(res.text)
  })

  test("cancelling at the period's end with a downgrade scheduled: the same bytes on every read", async () => {
    const user = await app.createUser()
    const expiresAt = days(now(), 20)
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt, autoRenew: false })
    await app.sql`update services set cancel_at = ${expiresAt}, scheduled_plan_id = ${cheapPlan}, scheduled_cycle_id = ${cheapCycle}
      where id = ${id}`
    const schedule = {
      cancel_at: expiresAt.toISOString(),
      scheduled_change: {
        plan: { id: cheapPlan, name: "Lite" },
        cycle: { id: cheapCycle, name: "Monthly", duration_days: 30, price: "3.00" },
        effective_at: expiresAt.toISOString()
      }
    }
    const res = await app.get("/v1/services/current", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.text).toBe(detail(id, expiresAt, schedule))
    expect((await app.get(`/v1/services/${id}`, { token: user.token })).text).toBe(res.text)
    const list = await app.get("/v1/services", { token: user.token })
    expect(list.text).toBe(
      JSON.stringify({
        success: true,
        data: [
          {
            id,
            plan: { id: planId, name: "Pro" },
            cycle: { name: "Quarterly", duration_days: 90, price: "24.50" },
            status: "active",
            starts_at: now().toISOString(),
            expires_at: expiresAt.toISOString(),
            auto_renew: false,
            grace_until: null,
            ...schedule
          }
        ]
      })
    )
  })

  test("no current service: 404 with the same body", async () => {
    const user = await app.createUser()
    const res = await app.get("/v1/services/current", { token: user.token })
    expect(res.status).toBe(404)
    expect(res.text).toBe(JSON.stringify({ success: false, message: "Resource not found." }))
  })
})

describe("invoices page 2 (issue 27, [D36])", () => {
  test("the same bytes: items, meta and links in their order", async () => {
    const user = await app.createUser()
    for (let i = 0; i < 20; i++) {
      await app.sql`insert into invoices (user_id, plan_id, cycle_id, amount, discount, currency, status, gateway, due_date, created_at, paid_at)
        values (${user.id}, ${planId}, ${cycleId}, '24.50', '0.00', 'EUR', ${i % 2 === 0 ? "paid" : "pending"}, 'manual',
                ${days(now(), 7)}, ${new Date(now().getTime() - i * 60_000)}, ${i % 2 === 0 ? now() : null})`
    }
    const rows = await app.sql<{ id: number; uuid: string; status: string; created_at: Date; paid_at: Date | null }>`
      select id, uuid::text as uuid, status, created_at, paid_at from invoices where user_id = ${user.id}
      order by created_at desc, id desc offset 15`
    const res = await app.get("/v1/invoices?page=2", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/json")
    const base = `${app.config.publicUrl}/v1/invoices`
    expect(res.text).toBe(
      JSON.stringify({
        success: true,
        data: rows.map((r) => ({
          id: r.id,
          uuid: r.uuid,
          amount: "24.50",
          currency: "EUR",
          status: r.status,
          gateway: "manual",
          created_at: r.created_at.toISOString(),
          paid_at: r.paid_at === null ? null : r.paid_at.toISOString()
        })),
        meta: { current_page: 2, last_page: 2, per_page: 15, total: 20 },
        links: { first: `${base}?page=1`, last: `${base}?page=2`, prev: `${base}?page=1`, next: null }
      })
    )
    // a page past the end still counts the total
    const me = await typedClient(app, { token: user.token })
    const past = await ok(me.billing.listInvoices({ urlParams: { page: 3 } }))
    expect(past.meta).toEqual({ current_page: 3, last_page: 2, per_page: 15, total: 20 })
    expect(past.data).toEqual([])
  })
})

describe("the bearer check on every read ([D4], [D20])", () => {
  test("a token revoked is refused on the very next read", async () => {
    const user = await app.createUser()
    const id = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(now(), 30) })
    // the token works before it is revoked (the typed client decodes only the declared 200)
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.services.currentService())).id).toBe(id)
    const tokenId = Number(user.token.split("|")[0])
    await app.sql`delete from access_tokens where id = ${tokenId}`
    for (const path of ["/v1/services/current", "/v1/invoices?page=2", "/v1/services"]) {
      const res = await app.get(path, { token: user.token })
      expect(res.status).toBe(401)
      expect(res.text).toBe(JSON.stringify({ success: false, message: "Unauthenticated." }))
    }
  })

  test("a malformed, unknown or wrong-secret token is 401", async () => {
    const user = await app.createUser()
    const [id, secret] = user.token.split("|") as [string, string]
    const wrong = `${id}|${secret.slice(0, -1)}${secret.endsWith("a") ? "b" : "a"}`
    for (const token of ["nonsense", `99999999|${secret}`, wrong, `3000000000|${secret}`]) {
      expect((await app.get("/v1/services/current", { token })).status).toBe(401)
    }
    expect((await app.get("/v1/services/current", { headers: { authorization: `Basic ${user.token}` } })).status).toBe(401)
  })
})
