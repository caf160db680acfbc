import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D111] cancel at period end, cancel now, resume: `cancel_at` and `scheduled_change` on service
// responses, never renewed once cancelling, access stopping at once for `now` ([D91]), the
// confirmation mail ([D96]); pending invoices of the service cancelled with their balance back ([D109]).
let app: TestApp
let admin: { id: number; token: string }
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'USD')`
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

/** a user with an active, paid service */
const subscriber = async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const boss = await typedClient(app, { token: admin.token })
  const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  await ok(boss.billingAdmin.markPaid({ path: { invoice: order.uuid } }))
  const service = await ok(me.services.currentService())
  return { user, me, boss, service }
}

const cancel = (me: TypedClient, service: number, at: "period_end" | "now") => ok(me.subscriptions.cancelService({ path: { service }, payload: { at } }))

describe("cancel and resume [D111]", () => {
  test("service responses carry cancel_at and scheduled_change, null by default", async () => {
    const { me, service } = await subscriber()
    const res = await ok(me.services.getService({ path: { service: service.id } }))
    expect(res).toMatchObject({ cancel_at: null, scheduled_change: null, auto_renew: true })
    // the list items and the current service carry them too
    expect(await ok(me.services.listServices())).toEqual([expect.objectContaining({ id: service.id, cancel_at: null, scheduled_change: null })])
    expect(await ok(me.services.currentService())).toMatchObject({ id: service.id, cancel_at: null, scheduled_change: null })
    await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "period_end" } }))
    const [item] = await ok(me.services.listServices())
    expect(item).toMatchObject({ id: service.id, auto_renew: false, cancel_at: service.expires_at, scheduled_change: null })
    expect(await ok(me.services.currentService())).toMatchObject({ cancel_at: service.expires_at })
  })

  test("period_end: 200, auto_renew false, cancel_at = expires_at, still active; a confirmation mail; no renewal invoice; resume undoes it once", async () => {
    const { me, user, service } = await subscriber()
    // the typed client decodes only the declared 200
    const res = await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "period_end" } }))
    expect(res).toMatchObject({ id: service.id, status: "active", auto_renew: false, cancel_at: service.expires_at, scheduled_change: null })
    const mails = await app.sql<{
      kind: string
      subject: string
    }>`select kind, subject from outbox where dedupe_key like ${`service-cancelled:${service.id}:%`}`
    expect(mails).toEqual([{ kind: "service-cancelled", subject: `Your VPN service #${service.id} is cancelled` }])
    // a second cancel at period end changes nothing: 422
    const again = await app.post(`/v1/services/${service.id}/cancel`, { token: user.token, body: { at: "period_end" } })
    expect(again.status).toBe(422)
    expect(again.body.message).toBe("Service cannot be cancelled.")
    const resumed = await ok(me.subscriptions.resumeService({ path: { service: service.id } }))
    expect(resumed).toMatchObject({ auto_renew: true, cancel_at: null, status: "active" })
    // turning auto-renew back on is resuming too
    await cancel(me, service.id, "period_end")
    await ok(me.services.setAutoRenew({ path: { service: service.id }, payload: { auto_renew: true } }))
    expect(await ok(me.services.getService({ path: { service: service.id } }))).toMatchObject({ auto_renew: true, cancel_at: null })
    const twice = await app.post(`/v1/services/${service.id}/resume`, { token: user.token })
    expect(twice.status).toBe(422)
    expect(twice.body).toEqual({ success: false, message: "Service cannot be resumed." })
  })

  test("now: 200 status cancelled, no current service; a pending invoice of the service is cancelled and its balance given back", async () => {
    const { me, boss, user, service } = await subscriber()
    await ok(boss.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: 400, currency: "USD", reason: "x" } }))
    // a pending invoice on the service (as a renewal would be), partly paid by the balance
    const [row] = await app.sql<{
      uuid: string
    }>`insert into invoices (user_id, service_id, plan_id, cycle_id, amount, balance_applied, currency, status, gateway, due_date)
      values (${user.id}, ${service.id}, 1, 1, '6.00', '4.00', 'USD', 'pending', 'manual', now()) returning uuid::text as uuid`
    await ok(boss.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: -400, currency: "USD", reason: "held by the invoice" } }))
    const res = await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "now" } }))
    expect(res).toMatchObject({ status: "cancelled", auto_renew: false, cancel_at: null })
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
    const invoice = await ok(me.billing.getInvoice({ path: { invoice: row!.uuid } }))
    expect(invoice.status).toBe("cancelled")
    expect(await ok(me.balance.getBalance())).toEqual([{ currency: "USD", amount: "4.00" }])
    // cancelled: neither cancel nor resume applies
    expect((await app.post(`/v1/services/${service.id}/cancel`, { token: user.token, body: { at: "now" } })).body.message).toBe("Service cannot be cancelled.")
    expect((await app.post(`/v1/services/${service.id}/resume`, { token: user.token })).status).toBe(422)
  })

  test("another user's service is 404; a bad `at` is 422 errors.at; no token 401", async () => {
    const { service } = await subscriber()
    const other = await app.createUser()
    expect((await app.post(`/v1/services/${service.id}/cancel`, { token: other.token, body: { at: "now" } })).status).toBe(404)
    expect((await app.post(`/v1/services/${service.id}/resume`, { token: other.token })).status).toBe(404)
    const bad = await app.post(`/v1/services/${service.id}/cancel`, { token: other.token, body: { at: "tomorrow" } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.at).toEqual(["The selected at is invalid."])
    expect((await app.post(`/v1/services/${service.id}/cancel`, { body: { at: "now" } })).status).toBe(401)
  })

  test("a service cancelling at period end gets no renewal invoice, expires at cancel_at, and cannot be resumed after", async () => {
    const start = new Date(app.clock.get().getTime() + 1000 * DAY)
    app.clock.set(start)
    admin = await app.createUser({ role: "admin" })
    const { me, user, service } = await subscriber()
    await ok(me.subscriptions.cancelService({ path: { service: service.id }, payload: { at: "period_end" } }))
    app.clock.set(new Date(new Date(service.expires_at).getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const invoices = await ok(me.billing.listInvoices({ urlParams: {} }))
    expect(invoices.data).toHaveLength(1)
    app.clock.set(new Date(new Date(service.expires_at).getTime() + 60_000))
    await app.run(runJobsOnce)
    // the token was issued 30 days ago, within its lifetime
    const after = await ok(me.services.getService({ path: { service: service.id } }))
    expect(after.status).toBe("expired")
    expect((await app.post(`/v1/services/${service.id}/resume`, { token: user.token })).body.message).toBe("Service cannot be resumed.")
  })
})
