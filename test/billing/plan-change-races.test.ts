import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// Issue 34, the review's money holes around plan changes ([D108], [D109], [D110]), with real
// parallel requests. Run on PGlite and on PostgreSQL, where the race minted balance:
//   scripts/with-postgres.sh bash -c 'TEST_DATABASE_URL="$PG_URL" bun test test/billing/plan-change-races.test.ts'
// - parallel changes of one service: one takes effect, the others see it done (422), a paid period
//   is credited once, a funded user is charged once, and no request is a 500 (deadlocks retried);
// - what a change credited of a paid invoice can no longer be refunded, and a change priced on a
//   period refunded meanwhile cannot take effect (its payment goes to the balance);
// - a change invoice is due an hour after it is made.
let app: TestApp
let admin: { id: number; token: string }
let boss: TypedClient
const DAY = 86_400_000
const SECRET = "whsec_test"

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Plus', '', 100, 0), ('Pro', '', 500, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values
    (1, 'Monthly', 30, '9.99', 'USD'), (1, 'Yearly', 365, '89.00', 'USD'),
    (2, 'Monthly', 30, '30.00', 'USD'), (2, 'Yearly', 365, '300.00', 'USD'), (2, 'Quarterly', 90, '120.00', 'USD')`
  admin = await app.createUser({ role: "admin" })
  boss = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

/** a user whose service on the cycle was paid now by an admin's hand; the paid invoice's uuid */
const subscriber = async (cycleId: number) => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  // the typed client decodes only the declared statuses (201, 200)
  const order = await ok(me.billing.placeOrder({ payload: { plan_id: cycleId <= 2 ? 1 : 2, cycle_id: cycleId } }))
  await ok(boss.billingAdmin.markPaid({ path: { invoice: order.uuid } }))
  const current = await ok(me.services.currentService())
  return { user, me, serviceId: current.id, paidUuid: order.uuid as string }
}

/** a change on the wire: the races tally its statuses */
const change = (token: string, serviceId: number, cycleId: number) =>
  app.post(`/v1/services/${serviceId}/change`, { token, body: { plan_id: cycleId <= 2 ? 1 : 2, cycle_id: cycleId } })
/** an upgrade through the typed client: only its 201 decodes to an invoice (a 200 is the service of a downgrade) */
const upgrade = async (me: TypedClient, serviceId: number, cycleId: number) => {
  const answer = await ok(me.subscriptions.changePlan({ path: { service: serviceId }, payload: { plan_id: cycleId <= 2 ? 1 : 2, cycle_id: cycleId } }))
  if (!("uuid" in answer)) throw new Error(`expected the 201 change invoice, got ${JSON.stringify(answer)}`)
  return answer
}
const fund = (userId: number, cents: number) =>
  ok(boss.balanceAdmin.adjustBalance({ path: { user: userId }, payload: { amount: cents, currency: "USD", reason: "Funds" } }))

const balanceOf = async (token: string) => {
  const me = await typedClient(app, { token })
  return ok(me.balance.getBalance())
}
/** the ledger's sum per currency equals the balance ([D109]) */
const ledgerMatches = async (userId: number) => {
  const sums = await app.sql<{ currency: string; sum: string }>`select currency, sum(amount)::text as sum from balance_transactions
    where user_id = ${userId} group by currency order by currency`
  const balances = await app.sql<{ currency: string; amount: string }>`select currency, amount::text as amount from balances
    where user_id = ${userId} order by currency`
  expect(sums.map((r) => [r.currency, Number(r.sum).toFixed(2)])).toEqual(balances.map((r) => [r.currency, Number(r.amount).toFixed(2)]))
}

const tally = (statuses: ReadonlyArray<number>) => statuses.reduce<Record<number, number>>((acc, s) => ({ ...acc, [s]: (acc[s] ?? 0) + 1 }), {})

describe("parallel plan changes of one service (issue 34, [D108])", () => {
  test("30 at once, Plus Yearly -> Plus Monthly (a credit above the price): one 201, 29 x 422, the period credited once", async () => {
    const { me, serviceId, user } = await subscriber(2)
    const results = await Promise.all(Array.from({ length: 30 }, () => change(user.token, serviceId, 1)))
    expect(tally(results.map((r) => r.status))).toEqual({ 201: 1, 422: 29 })
    const made = results.find((r) => r.status === 201)!
    expect(made.body.data).toMatchObject({ status: "paid", amount: "0.00", gateway: "balance" })
    for (const refused of results.filter((r) => r.status === 422)) {
      expect(refused.body.errors).toEqual({ plan_id: ["The service is already on this plan and cycle."] })
    }
    // the whole year unused: 89.00 of credit, 9.99 of it for the month, 79.01 to the balance, once
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "79.01" }])
    await ledgerMatches(user.id)
    expect((await ok(me.services.getService({ path: { service: serviceId } }))).cycle.id).toBe(1)
    expect(await app.sql`select id from invoices where service_id = ${serviceId} and status = 'paid' and change_credit is not null`).toHaveLength(1)
  }, 60_000)

  test("a funded user, 30 upgrades at once Plus Monthly -> Pro Monthly (paid from the balance): charged once", async () => {
    const { serviceId, user } = await subscriber(1)
    expect((await fund(user.id, 10_000)).amount).toBe("100.00")
    const results = await Promise.all(Array.from({ length: 30 }, () => change(user.token, serviceId, 3)))
    expect(tally(results.map((r) => r.status))).toEqual({ 201: 1, 422: 29 })
    // 30.00 less the whole month's 9.99 = 20.01, from the balance once
    expect(results.find((r) => r.status === 201)!.body.data).toMatchObject({ status: "paid", balance_applied: "20.01", amount: "0.00" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "79.99" }])
    const paid = await app.sql`select id from invoices where service_id = ${serviceId} and status = 'paid' and change_credit is not null`
    expect(paid).toHaveLength(1)
    await ledgerMatches(user.id)
  }, 60_000)

  test("50 at once between two targets (pending invoices, part funded): no 500, one pending change invoice left, the balance whole", async () => {
    const { me, serviceId, user } = await subscriber(1)
    expect((await ok(boss.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: 500, currency: "USD", reason: "Funds" } }))).amount).toBe(
      "5.00"
    )
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => change(user.token, serviceId, i % 2 === 0 ? 3 : 4)))
    expect(tally(results.map((r) => r.status))).toEqual({ 201: 50 })
    const pending = await app.sql<{ balance_applied: string }>`select balance_applied::text as balance_applied from invoices
      where service_id = ${serviceId} and status = 'pending'`
    expect(pending).toHaveLength(1)
    // each cancelled invoice gave its share back: the balance is what the one pending invoice did not take
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: (5 - Number(pending[0]!.balance_applied)).toFixed(2) }])
    await ledgerMatches(user.id)
    expect((await ok(me.services.getService({ path: { service: serviceId } }))).plan.id).toBe(1)
  }, 60_000)
})

describe("what a change credited is not refunded again (issue 34, [D110])", () => {
  const refund = (uuid: string, body: Record<string, unknown>) => app.post(`/v1/admin/invoices/${uuid}/refund`, { token: admin.token, body })
  /** a whole refund to the balance through the typed client: it decodes only the declared 201 */
  const refundAll = (uuid: string, reason: string) => ok(boss.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload: { to: "balance", reason } }))
  const webhook = (body: Record<string, unknown>) => {
    const raw = JSON.stringify(body)
    const t = Math.floor(app.clock.get().getTime() / 1000)
    return app.post("/v1/webhooks/payments/manual", {
      raw,
      headers: { "x-signature": `t=${t},v1=${createHmac("sha256", SECRET).update(`${t}.${raw}`).digest("hex")}` }
    })
  }

  test("half-way through a paid month a change credits half of it: a refund of that invoice is at most the other half", async () => {
    const { me, paidUuid, serviceId, user } = await subscriber(3)
    app.clock.advance(15 * DAY)
    // Pro Monthly (1.00 a day) -> Pro Quarterly (1.33 a day): 30.00 x 15/30 = 15.00 credited, 105.00 due
    const made = await upgrade(me, serviceId, 5)
    expect(made.amount).toBe("105.00")
    await ok(boss.billingAdmin.markPaid({ path: { invoice: made.uuid } }))
    const tooMuch = await refund(paidUuid, { amount: "15.01", to: "balance", reason: "Too much" })
    expect(tooMuch.status).toBe(422)
    expect(tooMuch.body.errors).toEqual({ amount: ["The amount must be between 0.01 and 15.00 (what is left to refund)."] })
    const all = await ok(boss.refundsAdmin.refundInvoice({ path: { invoice: paidUuid }, payload: { to: "balance", reason: "The rest" } }))
    expect(all.amount).toBe("15.00")
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "15.00" }])
    expect((await refund(paidUuid, { amount: "0.01", to: "balance", reason: "More" })).status).toBe(422)
  }, 60_000)

  test("refunded while the change waits for its payment: the change cannot take effect; its payment is 200 and goes to the balance", async () => {
    const { me, paidUuid, serviceId, user } = await subscriber(1)
    const made = await upgrade(me, serviceId, 3)
    // 30.00 less the whole month's 9.99
    expect(made.amount).toBe("20.01")
    expect((await refundAll(paidUuid, "Refunded")).amount).toBe("9.99")
    // an operator cannot mark it paid
    const byHand = await app.post(`/v1/admin/invoices/${made.uuid}/mark-paid`, { token: admin.token })
    expect(byHand.status).toBe(422)
    const paid = await webhook({ invoice_uuid: made.uuid, status: "paid", transaction_id: `tx-late-${user.id}`, amount: "20.01", currency: "USD" })
    expect(paid.status).toBe(200)
    expect(paid.body.data).toMatchObject({ uuid: made.uuid, status: "cancelled" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "30.00" }])
    expect((await ok(me.services.getService({ path: { service: serviceId } }))).plan.id).toBe(1)
    await ledgerMatches(user.id)
  }, 60_000)
})

describe("a change invoice is due in an hour (issue 34, [D108])", () => {
  test("due_date = made + 1 h; past it the jobs cancel it and the old plan stays", async () => {
    const { me, serviceId } = await subscriber(1)
    const made = await upgrade(me, serviceId, 3)
    expect(made.due_date.getTime() - app.clock.get().getTime()).toBe(3_600_000)
    app.clock.advance(3_600_000 + 1000)
    await app.run(runJobsOnce)
    expect((await ok(me.billing.getInvoice({ path: { invoice: made.uuid } }))).status).toBe("cancelled")
    expect((await ok(me.services.getService({ path: { service: serviceId } }))).plan.id).toBe(1)
  }, 60_000)
})
