import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D108] plan changes: the quote, an upgrade invoice priced with the prorated credit of the paid
// period (integer cents, rounded down), paying it switches the service at once, a 0.00 upgrade paid at
// once with the excess credit on the balance ([D109]), a downgrade scheduled for the period's end and
// billed by the renewal of [D80], DELETE, a second change cancelling the first invoice, the 422s, and
// the `service.changed` event ([D101]).
let app: TestApp
let admin: { id: number; token: string }
let boss: TypedClient
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
  boss = await typedClient(app, { token: admin.token })
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      received.push((await req.json()) as { type: string; data: Record<string, unknown> })
      return new Response(null, { status: 204 })
    }
  })
  // the typed client decodes only the declared 201
  const hook = await ok(boss.webhooksAdmin.createWebhook({ payload: { url: `http://127.0.0.1:${server.port}/changes`, events: ["service.changed"] } }))
  expect(hook.url).toBe(`http://127.0.0.1:${server.port}/changes`)
})
afterAll(async () => {
  server.stop(true)
  await app.dispose()
})

/** a user whose service on `cycle` was paid `at` (the clock is left there) */
const subscriber = async (cycleId = 1) => {
  const user = await app.createUser()
  const planId = cycleId === 1 ? 1 : 2
  const me = await typedClient(app, { token: user.token })
  const order = await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))
  await ok(boss.billingAdmin.markPaid({ path: { invoice: order.uuid } }))
  const service = await ok(me.services.currentService())
  return { user, me, service }
}

/** the quote as the typed client decodes it (`effective_at` a Date) */
const quote = (me: TypedClient, service: number, planId: number, cycleId: number) =>
  ok(me.subscriptions.changeQuote({ path: { service }, urlParams: { plan_id: planId, cycle_id: cycleId } }))
/** the quote on the wire, for its 4xx envelopes */
const quoteWire = (token: string, service: number, planId: number, cycleId: number) =>
  app.get(`/v1/services/${service}/change-quote?plan_id=${planId}&cycle_id=${cycleId}`, { token })

/** a change answers 201 with its invoice (an upgrade) or 200 with the service (a downgrade): each status decodes its own schema */
const invoiceOf = <A extends object>(answer: A): Extract<A, { readonly uuid: unknown }> => {
  if (!("uuid" in answer)) throw new Error(`expected the 201 change invoice, got ${JSON.stringify(answer)}`)
  return answer as Extract<A, { readonly uuid: unknown }>
}
const serviceOf = <A extends object>(answer: A): Exclude<A, { readonly uuid: unknown }> => {
  if ("uuid" in answer) throw new Error(`expected the 200 service, got ${JSON.stringify(answer)}`)
  return answer as Exclude<A, { readonly uuid: unknown }>
}
const changeTo = (me: TypedClient, service: number, planId: number, cycleId: number) =>
  ok(me.subscriptions.changePlan({ path: { service }, payload: { plan_id: planId, cycle_id: cycleId } }))
const serviceNow = (me: TypedClient, service: number) => ok(me.services.getService({ path: { service } }))
const invoiceNow = (me: TypedClient, invoice: string) => ok(me.billing.getInvoice({ path: { invoice } }))
const pendingOf = async (me: TypedClient) => (await ok(me.billing.listInvoices({ urlParams: { status: "pending" } }))).data
const markPaid = (invoice: string) => ok(boss.billingAdmin.markPaid({ path: { invoice } }))
const credit = (user: number, cents: number) =>
  ok(boss.balanceAdmin.adjustBalance({ path: { user }, payload: { amount: cents, currency: "USD", reason: "x" } }))

describe("plan changes [D108]", () => {
  test("an upgrade half-way through the period: credit = paid x unused/period (rounded down), amount_due the rest; paying it switches the plan at once; service.changed", async () => {
    const { me, service } = await subscriber()
    app.clock.advance(15 * DAY)
    const q = await quote(me, service.id, 2, 2)
    expect(q).toEqual({ kind: "upgrade", credit: "5.00", amount_due: "25.00", currency: "USD", effective_at: null })
    // a fraction of a cent is rounded down: 10.00 x (15 d - 1 s) / 30 d = 4.99998 -> 4.99
    app.clock.advance(1000)
    expect(await quote(me, service.id, 2, 2)).toMatchObject({ credit: "4.99", amount_due: "25.01" })
    const change = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 2, cycle_id: 2 } })))
    expect(change).toMatchObject({ status: "pending", amount: "25.01", plan: { name: "Pro" }, cycle: { name: "Monthly", duration_days: 30 } })
    // not yet paid: still on Basic
    expect((await ok(me.services.getService({ path: { service: service.id } }))).plan.id).toBe(1)
    const paidAt = app.clock.get()
    await ok(boss.billingAdmin.markPaid({ path: { invoice: change.uuid } }))
    const after = await ok(me.services.getService({ path: { service: service.id } }))
    expect(after).toMatchObject({
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
    const { me, service } = await subscriber()
    // Weekly Pro at 9.00 costs more per day than Basic Monthly at 10.00; the whole paid period is unused
    const q = await quote(me, service.id, 2, 4)
    expect(q).toEqual({ kind: "upgrade", credit: "10.00", amount_due: "0.00", currency: "USD", effective_at: null })
    const change = invoiceOf(await changeTo(me, service.id, 2, 4))
    expect(change).toMatchObject({ status: "paid", amount: "0.00", gateway: "balance" })
    expect((await ok(me.services.getService({ path: { service: service.id } }))).cycle.id).toBe(4)
    expect(await ok(me.balance.getBalance())).toEqual([{ currency: "USD", amount: "1.00" }])
    const receipt = await app.sql<{ n: number }>`select count(*)::int as n from outbox where dedupe_key = ${`payment-received:${change.uuid}`}`
    expect(receipt[0]!.n).toBe(1)
  })

  test("a downgrade: credit 0.00, due the new price at expires_at; 200 the service with scheduled_change; DELETE removes it", async () => {
    const { me, service } = await subscriber(2)
    const q = await quote(me, service.id, 1, 1)
    expect(q).toEqual({ kind: "downgrade", credit: "0.00", amount_due: "10.00", currency: "USD", effective_at: new Date(service.expires_at) })
    const change = serviceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 1, cycle_id: 1 } })))
    expect(change).toMatchObject({
      id: service.id,
      plan: { id: 2 },
      scheduled_change: {
        plan: { id: 1, name: "Basic" },
        cycle: { id: 1, name: "Monthly", duration_days: 30, price: "10.00" },
        effective_at: service.expires_at
      }
    })
    const removed = await ok(me.subscriptions.removeChange({ path: { service: service.id } }))
    expect(removed.scheduled_change).toBeNull()
  })

  test("a scheduled downgrade is renewed on the new cycle; once that renewal is paid the service continues on the new plan", async () => {
    const { me, service } = await subscriber(2)
    serviceOf(await changeTo(me, service.id, 1, 1))
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const list = await ok(me.billing.listInvoices({ urlParams: { status: "pending" } }))
    expect(list.data).toHaveLength(1)
    const renewal = await ok(me.billing.getInvoice({ path: { invoice: list.data[0]!.uuid } }))
    expect(renewal).toMatchObject({ amount: "10.00", plan: { name: "Basic" }, cycle: { name: "Monthly" } })
    await markPaid(renewal.uuid)
    const after = await serviceNow(me, service.id)
    expect(after).toMatchObject({
      plan: { id: 1 },
      cycle: { id: 1 },
      scheduled_change: null,
      expires_at: new Date(new Date(service.expires_at).getTime() + 30 * DAY).toISOString()
    })
  })

  test("a downgrade scheduled after its renewal invoice was made replaces that invoice with one for the new cycle (its balance moved); DELETE puts the old cycle back; paying it switches at renewal", async () => {
    const { me, service, user } = await subscriber(2)
    await credit(user.id, 300)
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const pending = () => pendingOf(me)
    const [old] = await pending()
    expect(await ok(me.billing.getInvoice({ path: { invoice: old!.uuid } }))).toMatchObject({
      amount: "27.00",
      balance_applied: "3.00",
      plan: { name: "Pro" }
    })
    const change = serviceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 1, cycle_id: 1 } })))
    expect(change.scheduled_change).toMatchObject({ plan: { id: 1 }, cycle: { id: 1 }, effective_at: service.expires_at })
    // [D108]: the renewal is made for the new cycle: the old one cancelled, one pending renewal of 10.00 less the balance
    expect((await invoiceNow(me, old!.uuid)).status).toBe("cancelled")
    const [renewal] = await pending()
    expect(await pending()).toHaveLength(1)
    expect(await invoiceNow(me, renewal!.uuid)).toMatchObject({
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
    await ok(me.subscriptions.removeChange({ path: { service: service.id } }))
    const [back] = await pending()
    expect(await pending()).toHaveLength(1)
    expect(await invoiceNow(me, back!.uuid)).toMatchObject({
      amount: "27.00",
      balance_applied: "3.00",
      plan: { name: "Pro" }
    })
    // scheduled again, the renewal paid: the service continues on the new plan for the new cycle
    serviceOf(await changeTo(me, service.id, 1, 1))
    const [again] = await pending()
    expect(await invoiceNow(me, again!.uuid)).toMatchObject({ amount: "7.00", plan: { name: "Basic" } })
    await ok(boss.billingAdmin.markPaid({ path: { invoice: again!.uuid } }))
    expect(await ok(me.services.getService({ path: { service: service.id } }))).toMatchObject({
      plan: { id: 1 },
      cycle: { id: 1 },
      scheduled_change: null,
      expires_at: new Date(new Date(service.expires_at).getTime() + 30 * DAY).toISOString()
    })
    // [D109]: the ledger still sums to the balance (0.00: all of it paid the renewal)
    expect(await ok(me.balance.getBalance())).toEqual([{ currency: "USD", amount: "0.00" }])
  })

  test("a second change while a change invoice is pending cancels the first; the balance pays a change invoice too", async () => {
    const { me, service, user } = await subscriber()
    await ok(boss.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: 500, currency: "USD", reason: "x" } }))
    const first = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 2, cycle_id: 2 } })))
    // the whole period is unused: credit 10.00, due 20.00, of which the balance pays 5.00
    expect(first).toMatchObject({ status: "pending", amount: "15.00", balance_applied: "5.00" })
    const second = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 1, cycle_id: 6 } })))
    expect((await ok(me.billing.getInvoice({ path: { invoice: first.uuid } }))).status).toBe("cancelled")
    // the 5.00 came back and went to the second invoice
    expect((await ok(me.billing.getInvoice({ path: { invoice: second.uuid } }))).balance_applied).toBe("0.01")
  })

  test("422s: a cycle of another plan or currency (errors.cycle_id), the same plan and cycle or an inactive plan (errors.plan_id), a service not active (message); another user's 404", async () => {
    const { me, service, user } = await subscriber()
    const post = (body: Record<string, unknown>) => app.post(`/v1/services/${service.id}/change`, { token: user.token, body })
    expect(Object.keys((await post({ plan_id: 1, cycle_id: 2 })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await post({ plan_id: 2, cycle_id: 3 })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await post({ plan_id: 1, cycle_id: 1 })).body.errors)).toEqual(["plan_id"])
    expect(Object.keys((await post({ plan_id: 3, cycle_id: 5 })).body.errors)).toEqual(["plan_id"])
    expect(Object.keys((await post({})).body.errors).sort()).toEqual(["cycle_id", "plan_id"])
    // [D112]: an unknown or disabled gateway, as on orders
    expect(Object.keys((await post({ plan_id: 2, cycle_id: 2, gateway: "nope" })).body.errors)).toEqual(["gateway"])
    expect(Object.keys((await app.get(`/v1/services/${service.id}/change-quote?plan_id=2`, { token: user.token })).body.errors)).toEqual(["cycle_id"])
    expect(Object.keys((await quoteWire(user.token, service.id, 2, 3)).body.errors)).toEqual(["cycle_id"])
    const other = await app.createUser()
    expect((await quoteWire(other.token, service.id, 2, 2)).status).toBe(404)
    expect((await app.post(`/v1/services/${service.id}/change`, { token: other.token, body: { plan_id: 2, cycle_id: 2 } })).status).toBe(404)
    await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "now" } }))
    const cancelled = await post({ plan_id: 2, cycle_id: 2 })
    expect(cancelled.status).toBe(422)
    expect(cancelled.body).toEqual({ success: false, message: "Service cannot be changed." })
  })

  test("the quote of a service that is not active: 422 `Service cannot be changed.`", async () => {
    const { me, service, user } = await subscriber()
    await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "now" } }))
    const q = await quoteWire(user.token, service.id, 2, 2)
    expect(q.status).toBe(422)
    expect(q.body).toEqual({ success: false, message: "Service cannot be changed." })
  })

  test("an upgrade paid on a service cancelling at its period's end: it still ends at its (new) period's end, cancel_at = expires_at [D111]", async () => {
    const { me, service } = await subscriber()
    await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "period_end" } }))
    app.clock.advance(10 * DAY)
    const change = invoiceOf(await changeTo(me, service.id, 2, 2))
    await markPaid(change.uuid)
    const after = await ok(me.services.getService({ path: { service: service.id } }))
    expect(after).toMatchObject({ plan: { id: 2 }, auto_renew: false })
    expect(after.expires_at).not.toBe(service.expires_at)
    expect(after.cancel_at).toBe(after.expires_at)
  })

  test("an upgrade paid while a renewal invoice waits: the renewal (of a period that is gone) is cancelled and its balance given back", async () => {
    const { me, service, user } = await subscriber()
    await credit(user.id, 200)
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const [renewal] = (await ok(me.billing.listInvoices({ urlParams: { status: "pending" } }))).data
    expect(await invoiceNow(me, renewal!.uuid)).toMatchObject({ amount: "8.00", balance_applied: "2.00" })
    const change = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: 2, cycle_id: 2 } })))
    await ok(boss.billingAdmin.markPaid({ path: { invoice: change.uuid } }))
    expect((await ok(me.billing.getInvoice({ path: { invoice: renewal!.uuid } }))).status).toBe("cancelled")
    expect(await ok(me.balance.getBalance())).toEqual([{ currency: "USD", amount: "2.00" }])
    expect(await serviceNow(me, service.id)).toMatchObject({ plan: { id: 2 }, cycle: { id: 2 } })
  })

  test("more devices than the new plan allows: they are kept, but no new one until there are fewer", async () => {
    const { me, service, user } = await subscriber(2)
    const device = (name: string) => app.post("/v1/devices", { token: user.token, body: { name, platform: "ios" } })
    const ids: Array<number> = []
    for (const name of ["A", "B", "C"]) {
      // the typed client decodes only the declared 201
      const made = await ok(me.vpn.createDevice({ payload: { name, platform: "ios" } }))
      ids.push(made.id)
    }
    // Basic (the downgrade's plan) allows 2 devices; the change is made and its renewal paid
    const limit = (n: number) => ok(boss.catalogAdmin.updatePlan({ path: { plan: 1 }, payload: { device_limit: n } }))
    expect((await limit(2)).device_limit).toBe(2)
    try {
      serviceOf(await changeTo(me, service.id, 1, 1))
      app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
      await app.run(runJobsOnce)
      const [renewal] = await pendingOf(me)
      await ok(boss.billingAdmin.markPaid({ path: { invoice: renewal!.uuid } }))
      expect((await ok(me.services.currentService())).plan.id).toBe(1)
      expect(await ok(me.vpn.listDevices())).toHaveLength(3)
      const refused = await device("D")
      expect(refused.status).toBe(422)
      expect(refused.body.message).toBe("Device limit reached.")
      await ok(me.vpn.deleteDevice({ path: { device: ids[0]! } }))
      expect((await device("D")).status).toBe(422)
      await ok(me.vpn.deleteDevice({ path: { device: ids[1]! } }))
      expect((await ok(me.vpn.createDevice({ payload: { name: "D", platform: "ios" } }))).name).toBe("D")
    } finally {
      await limit(5) // the column's default ([D90]): as the plan was made
    }
  })

  test("a period nobody paid for (an admin grant) credits 0.00", async () => {
    const user = await app.createUser()
    const grant = await ok(boss.servicesAdmin.grantService({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1 } }))
    const q = await quote(await typedClient(app, { token: user.token }), grant.id, 2, 2)
    expect(q).toMatchObject({ kind: "upgrade", credit: "0.00", amount_due: "30.00" })
  })
})
