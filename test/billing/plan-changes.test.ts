import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D108] plan changes: the quote, an upgrade invoice priced with the prorated credit of the paid
// period (integer cents, rounded down), paying it switches the service at once, a 0.00 upgrade paid at
// once with the excess credit on the balance ([D109]), a downgrade scheduled for the period's end and
// billed by the renewal of [D80], DELETE, a second change cancelling the first invoice, the 422s, and
// the `service.changed` event ([D101]).
let app: TestApp
let admin: { id: number; token: string }
let server: ReturnType<typeof Bun.serve>
const received: Array<{ type: string; data: Record<string, unknown> }> = []
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days, is_active)
    values ('Basic', '', 100, 0, true), ('Pro', '', 500, 0, true), ('Old', '', 10, 0, false)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values
    (1, 'Monthly', 30, '10.00', 'USD'), (2, 'Monthly', 30, '30.00', 'USD'), (2, 'Monthly EUR', 30, '28.00', 'EUR'),
    (2, 'Weekly', 7, '9.00', 'USD'), (3, 'Monthly', 30, '50.00', 'USD'), (1, 'Monthly (3 h)', 30, '10.01', 'USD')`
  admin = await app.createUser({ role: "admin" })
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      received.push((await req.json()) as { type: string; data: Record<string, unknown> })
      return new Response(null, { status: 204 })
    }
  })
  const hook = await app.post("/v1/admin/webhooks", {
    token: admin.token,
    body: { url: `http://127.0.0.1:${server.port}/changes`, events: ["service.changed"] }
  })
  expect(hook.status).toBe(201)
})
afterAll(async () => {
  server.stop(true)
  await app.dispose()
})

/** a user whose service on `cycle` was paid `at` (the clock is left there) */
const subscriber = async (cycleId = 1) => {
  const user = await app.createUser()
  const planId = cycleId === 1 ? 1 : 2
  const order = await app.post("/v1/orders", { token: user.token, body: { plan_id: planId, cycle_id: cycleId } })
  await app.post(`/v1/admin/invoices/${order.body.data.uuid}/mark-paid`, { token: admin.token })
  const current = await app.get("/v1/services/current", { token: user.token })
  return { user, service: current.body.data as { id: number; starts_at: string; expires_at: string } }
}

const quote = (token: string, service: number, planId: number, cycleId: number) =>
  app.get(`/v1/services/${service}/change-quote?plan_id=${planId}&cycle_id=${cycleId}`, { token })

describe("plan changes [D108]", () => {
  test("an upgrade half-way through the period: credit = paid x unused/period (rounded down), amount_due the rest; paying it switches the plan at once; service.changed", async () => {
    const { service, user } = await subscriber()
    app.clock.advance(15 * DAY)
    const q = await quote(user.token, service.id, 2, 2)
    expect(q.status).toBe(200)
    expect(q.body.data).toEqual({ kind: "upgrade", credit: "5.00", amount_due: "25.00", currency: "USD", effective_at: null })
    // a fraction of a cent is rounded down: 10.00 x (15 d - 1 s) / 30 d = 4.99998 -> 4.99
    app.clock.advance(1000)
    expect((await quote(user.token, service.id, 2, 2)).body.data).toMatchObject({ credit: "4.99", amount_due: "25.01" })
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 2, cycle_id: 2 } })
    expect(change.status).toBe(201)
    expect(change.body.data).toMatchObject({ status: "pending", amount: "25.01", plan: { name: "Pro" }, cycle: { name: "Monthly", duration_days: 30 } })
    // not yet paid: still on Basic
    expect((await app.get(`/v1/services/${service.id}`, { token: user.token })).body.data.plan.id).toBe(1)
    const paidAt = app.clock.get()
    expect((await app.post(`/v1/admin/invoices/${change.body.data.uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
    const after = await app.get(`/v1/services/${service.id}`, { token: user.token })
    expect(after.body.data).toMatchObject({
      plan: { id: 2, name: "Pro" },
      cycle: { id: 2 },
      status: "active",
      starts_at: paidAt.toISOString(),
      expires_at: new Date(paidAt.getTime() + 30 * DAY).toISOString()
    })
    const deadline = Date.now() + 5000
    let events: typeof received = []
    while (Date.now() < deadline) {
      await app.run(runJobsOnce)
      events = received.filter((e) => e.type === "service.changed" && e.data.id === service.id)
      if (events.length > 0) break
      await Bun.sleep(50)
    }
    expect(events[0]?.data).toMatchObject({ id: service.id, plan_id: 2, cycle_id: 2, kind: "upgrade" })
  })

  test("an upgrade whose credit covers the price: 0.00, paid at once (gateway balance), takes effect at once; the excess credit goes to the balance; a receipt", async () => {
    const { service, user } = await subscriber()
    // Weekly Pro at 9.00 costs more per day than Basic Monthly at 10.00; the whole paid period is unused
    const q = await quote(user.token, service.id, 2, 4)
    expect(q.body.data).toEqual({ kind: "upgrade", credit: "10.00", amount_due: "0.00", currency: "USD", effective_at: null })
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 2, cycle_id: 4 } })
    expect(change.status).toBe(201)
    expect(change.body.data).toMatchObject({ status: "paid", amount: "0.00", gateway: "balance" })
    expect((await app.get(`/v1/services/${service.id}`, { token: user.token })).body.data.cycle.id).toBe(4)
    expect((await app.get("/v1/account/balance", { token: user.token })).body.data).toEqual([{ currency: "USD", amount: "1.00" }])
    const receipt = await app.sql<{ n: number }>`select count(*)::int as n from outbox where dedupe_key = ${`payment-received:${change.body.data.uuid}`}`
    expect(receipt[0]!.n).toBe(1)
  })

  test("a downgrade: credit 0.00, due the new price at expires_at; 200 the service with scheduled_change; DELETE removes it", async () => {
    const { service, user } = await subscriber(2)
    const q = await quote(user.token, service.id, 1, 1)
    expect(q.body.data).toEqual({ kind: "downgrade", credit: "0.00", amount_due: "10.00", currency: "USD", effective_at: service.expires_at })
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
    expect(change.status).toBe(200)
    expect(change.body.data).toMatchObject({
      id: service.id,
      plan: { id: 2 },
      scheduled_change: {
        plan: { id: 1, name: "Basic" },
        cycle: { id: 1, name: "Monthly", duration_days: 30, price: "10.00" },
        effective_at: service.expires_at
      }
    })
    const removed = await app.del(`/v1/services/${service.id}/change`, { token: user.token })
    expect(removed.status).toBe(200)
    expect(removed.body.data.scheduled_change).toBeNull()
  })

  test("a scheduled downgrade is renewed on the new cycle; once that renewal is paid the service continues on the new plan", async () => {
    const { service, user } = await subscriber(2)
    await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const list = await app.get("/v1/invoices?status=pending", { token: user.token })
    expect(list.body.data).toHaveLength(1)
    const renewal = await app.get(`/v1/invoices/${list.body.data[0].uuid}`, { token: user.token })
    expect(renewal.body.data).toMatchObject({ amount: "10.00", plan: { name: "Basic" }, cycle: { name: "Monthly" } })
    await app.post(`/v1/admin/invoices/${renewal.body.data.uuid}/mark-paid`, { token: admin.token })
    const after = await app.get(`/v1/services/${service.id}`, { token: user.token })
    expect(after.body.data).toMatchObject({
      plan: { id: 1 },
      cycle: { id: 1 },
      scheduled_change: null,
      expires_at: new Date(new Date(service.expires_at).getTime() + 30 * DAY).toISOString()
    })
  })

  test("a downgrade scheduled after its renewal invoice was made replaces that invoice with one for the new cycle (its balance moved); DELETE puts the old cycle back; paying it switches at renewal", async () => {
    const { service, user } = await subscriber(2)
    await app.post(`/v1/admin/users/${user.id}/balance`, { token: admin.token, body: { amount: "3.00", currency: "USD", reason: "x" } })
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const pending = async () => (await app.get("/v1/invoices?status=pending", { token: user.token })).body.data as Array<{ uuid: string }>
    const [old] = await pending()
    expect((await app.get(`/v1/invoices/${old!.uuid}`, { token: user.token })).body.data).toMatchObject({
      amount: "27.00",
      balance_applied: "3.00",
      plan: { name: "Pro" }
    })
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
    expect(change.status).toBe(200)
    expect(change.body.data.scheduled_change).toMatchObject({ plan: { id: 1 }, cycle: { id: 1 }, effective_at: service.expires_at })
    // [D108]: the renewal is made for the new cycle: the old one cancelled, one pending renewal of 10.00 less the balance
    expect((await app.get(`/v1/invoices/${old!.uuid}`, { token: user.token })).body.data.status).toBe("cancelled")
    const [renewal] = await pending()
    expect(await pending()).toHaveLength(1)
    expect((await app.get(`/v1/invoices/${renewal!.uuid}`, { token: user.token })).body.data).toMatchObject({
      status: "pending",
      amount: "7.00",
      balance_applied: "3.00",
      plan: { name: "Basic" },
      cycle: { name: "Monthly" }
    })
    // a second jobs run makes no other renewal
    await app.run(runJobsOnce)
    expect(await pending()).toHaveLength(1)
    // DELETE: the renewal goes back to the current cycle
    expect((await app.del(`/v1/services/${service.id}/change`, { token: user.token })).status).toBe(200)
    const [back] = await pending()
    expect(await pending()).toHaveLength(1)
    expect((await app.get(`/v1/invoices/${back!.uuid}`, { token: user.token })).body.data).toMatchObject({
      amount: "27.00",
      balance_applied: "3.00",
      plan: { name: "Pro" }
    })
    // scheduled again, the renewal paid: the service continues on the new plan for the new cycle
    await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
    const [again] = await pending()
    expect((await app.get(`/v1/invoices/${again!.uuid}`, { token: user.token })).body.data).toMatchObject({ amount: "7.00", plan: { name: "Basic" } })
    expect((await app.post(`/v1/admin/invoices/${again!.uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
    expect((await app.get(`/v1/services/${service.id}`, { token: user.token })).body.data).toMatchObject({
      plan: { id: 1 },
      cycle: { id: 1 },
      scheduled_change: null,
      expires_at: new Date(new Date(service.expires_at).getTime() + 30 * DAY).toISOString()
    })
    // [D109]: the ledger still sums to the balance (0.00: all of it paid the renewal)
    expect((await app.get("/v1/account/balance", { token: user.token })).body.data).toEqual([{ currency: "USD", amount: "0.00" }])
  })

  test("a second change while a change invoice is pending cancels the first; the balance pays a change invoice too", async () => {
    const { service, user } = await subscriber()
    await app.post(`/v1/admin/users/${user.id}/balance`, { token: admin.token, body: { amount: "5.00", currency: "USD", reason: "x" } })
    const first = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 2, cycle_id: 2 } })
    expect(first.status).toBe(201)
    // the whole period is unused: credit 10.00, due 20.00, of which the balance pays 5.00
    expect(first.body.data).toMatchObject({ status: "pending", amount: "15.00", balance_applied: "5.00" })
    const second = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 6 } })
    expect(second.status).toBe(201)
    expect((await app.get(`/v1/invoices/${first.body.data.uuid}`, { token: user.token })).body.data.status).toBe("cancelled")
    // the 5.00 came back and went to the second invoice
    expect((await app.get(`/v1/invoices/${second.body.data.uuid}`, { token: user.token })).body.data.balance_applied).toBe("0.01")
  })

  test("422s: a cycle of another plan or currency (errors.cycle_id), the same plan and cycle or an inactive plan (errors.plan_id), a service not active (message); another user's 404", async () => {
    const { service, user } = await subscriber()
    const post = (body: Record<string, unknown>) => app.post(`/v1/services/${service.id}/change`, { token: user.token, body })
    expect(Object.keys((await post({ plan_id: 1, cycle_id: 2 })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await post({ plan_id: 2, cycle_id: 3 })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await post({ plan_id: 1, cycle_id: 1 })).body.errors)).toEqual(["plan_id"])
    expect(Object.keys((await post({ plan_id: 3, cycle_id: 5 })).body.errors)).toEqual(["plan_id"])
    expect(Object.keys((await post({})).body.errors).sort()).toEqual(["cycle_id", "plan_id"])
    // [D112]: an unknown or disabled gateway, as on orders
    expect(Object.keys((await post({ plan_id: 2, cycle_id: 2, gateway: "nope" })).body.errors)).toEqual(["gateway"])
    expect(Object.keys((await app.get(`/v1/services/${service.id}/change-quote?plan_id=2`, { token: user.token })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await quote(user.token, service.id, 2, 3)).body.errors)).toEqual(["cycle_id"])
    const other = await app.createUser()
    expect((await quote(other.token, service.id, 2, 2)).status).toBe(404)
    expect((await app.post(`/v1/services/${service.id}/change`, { token: other.token, body: { plan_id: 2, cycle_id: 2 } })).status).toBe(404)
    await app.post(`/v1/services/${service.id}/cancel`, { token: user.token, body: { at: "now" } })
    const cancelled = await post({ plan_id: 2, cycle_id: 2 })
    expect(cancelled.status).toBe(422)
    expect(cancelled.body).toEqual({ success: false, message: "Service cannot be changed." })
  })

  test("the quote of a service that is not active: 422 `Service cannot be changed.`", async () => {
    const { service, user } = await subscriber()
    await app.post(`/v1/services/${service.id}/cancel`, { token: user.token, body: { at: "now" } })
    const q = await quote(user.token, service.id, 2, 2)
    expect(q.status).toBe(422)
    expect(q.body).toEqual({ success: false, message: "Service cannot be changed." })
  })

  test("an upgrade paid on a service cancelling at its period's end: it still ends at its (new) period's end, cancel_at = expires_at [D111]", async () => {
    const { service, user } = await subscriber()
    await app.post(`/v1/services/${service.id}/cancel`, { token: user.token, body: { at: "period_end" } })
    app.clock.advance(10 * DAY)
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 2, cycle_id: 2 } })
    expect(change.status).toBe(201)
    expect((await app.post(`/v1/admin/invoices/${change.body.data.uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
    const after = (await app.get(`/v1/services/${service.id}`, { token: user.token })).body.data
    expect(after).toMatchObject({ plan: { id: 2 }, auto_renew: false })
    expect(after.expires_at).not.toBe(service.expires_at)
    expect(after.cancel_at).toBe(after.expires_at)
  })

  test("an upgrade paid while a renewal invoice waits: the renewal (of a period that is gone) is cancelled and its balance given back", async () => {
    const { service, user } = await subscriber()
    await app.post(`/v1/admin/users/${user.id}/balance`, { token: admin.token, body: { amount: "2.00", currency: "USD", reason: "x" } })
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const [renewal] = (await app.get("/v1/invoices?status=pending", { token: user.token })).body.data as Array<{ uuid: string }>
    expect((await app.get(`/v1/invoices/${renewal!.uuid}`, { token: user.token })).body.data).toMatchObject({ amount: "8.00", balance_applied: "2.00" })
    const change = await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 2, cycle_id: 2 } })
    expect(change.status).toBe(201)
    expect((await app.post(`/v1/admin/invoices/${change.body.data.uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
    expect((await app.get(`/v1/invoices/${renewal!.uuid}`, { token: user.token })).body.data.status).toBe("cancelled")
    expect((await app.get("/v1/account/balance", { token: user.token })).body.data).toEqual([{ currency: "USD", amount: "2.00" }])
    expect((await app.get(`/v1/services/${service.id}`, { token: user.token })).body.data).toMatchObject({ plan: { id: 2 }, cycle: { id: 2 } })
  })

  test("more devices than the new plan allows: they are kept, but no new one until there are fewer", async () => {
    const { service, user } = await subscriber(2)
    const device = (name: string) => app.post("/v1/devices", { token: user.token, body: { name, platform: "ios" } })
    const ids: Array<number> = []
    for (const name of ["A", "B", "C"]) {
      const made = await device(name)
      expect(made.status).toBe(201)
      ids.push(made.body.data.id)
    }
    // Basic (the downgrade's plan) allows 2 devices; the change is made and its renewal paid
    const limit = (n: number) => app.put("/v1/admin/plans/1", { token: admin.token, body: { device_limit: n } })
    expect((await limit(2)).status).toBe(200)
    try {
      await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
      app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
      await app.run(runJobsOnce)
      const [renewal] = (await app.get("/v1/invoices?status=pending", { token: user.token })).body.data as Array<{ uuid: string }>
      expect((await app.post(`/v1/admin/invoices/${renewal!.uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
      expect((await app.get("/v1/services/current", { token: user.token })).body.data.plan.id).toBe(1)
      expect((await app.get("/v1/devices", { token: user.token })).body.data).toHaveLength(3)
      const refused = await device("D")
      expect(refused.status).toBe(422)
      expect(refused.body.message).toBe("Device limit reached.")
      expect((await app.del(`/v1/devices/${ids[0]}`, { token: user.token })).status).toBeLessThan(300)
      expect((await device("D")).status).toBe(422)
      expect((await app.del(`/v1/devices/${ids[1]}`, { token: user.token })).status).toBeLessThan(300)
      expect((await device("D")).status).toBe(201)
    } finally {
      await limit(5) // the column's default ([D90]): as the plan was made
    }
  })

  test("a period nobody paid for (an admin grant) credits 0.00", async () => {
    const user = await app.createUser()
    const grant = await app.post(`/v1/admin/users/${user.id}/services`, { token: admin.token, body: { plan_id: 1, cycle_id: 1 } })
    expect(grant.status).toBe(201)
    const q = await quote(user.token, grant.body.data.id, 2, 2)
    expect(q.body.data).toMatchObject({ kind: "upgrade", credit: "0.00", amount_due: "30.00" })
  })
})
