import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D110] refunds as credit notes: to the balance or the gateway, never beyond what was paid (the
// gateway's amount plus balance_applied) even when two refunds race (real parallel requests; run on
// PostgreSQL too), `end_service`, the invoice detail's `refunded_amount` and `credit_notes`, status
// kept `paid`, the `invoice.refunded` event ([D101]), audited ([D100]), a refund notice ([D96]).
let app: TestApp
let admin: { id: number; token: string }
let boss: TypedClient
let server: ReturnType<typeof Bun.serve>
const received: Array<{ type: string; data: Record<string, unknown> }> = []

beforeAll(async () => {
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'USD')`
  admin = await app.createUser({ role: "admin" })
  boss = await typedClient(app, { token: admin.token })
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const body = (await req.json()) as { type: string; data: Record<string, unknown> }
      received.push(body)
      return new Response(null, { status: 204 })
    }
  })
  // the typed client decodes only the declared 201
  const hook = await ok(
    boss.webhooksAdmin.createWebhook({ payload: { url: `http://127.0.0.1:${server.port}/refunds`, events: ["invoice.refunded", "service.cancelled"] } })
  )
  expect(hook.url).toBe(`http://127.0.0.1:${server.port}/refunds`)
})
afterAll(async () => {
  server.stop(true)
  await app.dispose()
})

/** a user with a paid order of 10.00 (manual gateway), `balanceCents` of it paid from the balance */
const paidInvoice = async (balanceCents = 0) => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  if (balanceCents !== 0) {
    await ok(boss.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: balanceCents, currency: "USD", reason: "Start" } }))
  }
  const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  const uuid: string = order.uuid
  if (order.status !== "paid") {
    expect((await ok(boss.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
  }
  return { user, me, uuid }
}

/** a refund on the wire, for its 4xx envelopes and races */
const refund = (uuid: string, body: Record<string, unknown>) => app.post(`/v1/admin/invoices/${uuid}/refund`, { token: admin.token, body })
/** a refund (amount in cents) through the typed client: it decodes only the declared 201 */
const refunded = (
  uuid: string,
  payload: { readonly amount?: number; readonly to: "balance" | "gateway"; readonly reason: string; readonly end_service?: boolean }
) => ok(boss.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload }))

const eventsOf = async (type: string, atLeast: number) => {
  const deadline = Date.now() + 5000
  for (;;) {
    await app.run(runJobsOnce)
    const found = received.filter((e) => e.type === type)
    if (found.length >= atLeast || Date.now() > deadline) return found
    await Bun.sleep(50)
  }
}

describe("refunds [D110]", () => {
  test("a partial refund to the balance: 201 credit note; the invoice stays paid with refunded_amount and credit_notes; the balance is credited; audited; a notice; the event", async () => {
    const { me, user, uuid } = await paidInvoice()
    const res = await ok(boss.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload: { amount: 400, to: "balance", reason: "Outage in March" } }))
    expect(res).toMatchObject({ invoice_uuid: uuid, amount: "4.00", currency: "USD", to: "balance", reason: "Outage in March" })
    expect(typeof res.id).toBe("number")
    // decoded from the wire's ISO 8601 string
    expect(res.created_at).toBeInstanceOf(Date)
    const detail = await ok(me.billing.getInvoice({ path: { invoice: uuid } }))
    expect(detail).toMatchObject({ status: "paid", refunded_amount: "4.00", amount: "10.00" })
    expect(detail.credit_notes).toEqual([res])
    const balance = await ok(me.balance.getBalance())
    expect(balance).toEqual([{ currency: "USD", amount: "4.00" }])
    const ledger = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
    expect(ledger.data[0]).toMatchObject({ amount: "4.00", invoice_uuid: uuid })
    const audit = await app.sql<{ actor_id: number }>`select actor_id from audit_log
      where action = 'POST /v1/admin/invoices/:invoice/refund' and resource = ${`invoice:${uuid}`}`
    expect(audit).toEqual([{ actor_id: admin.id }])
    const notice = await app.sql<{
      kind: string
      recipient: string
    }>`select kind, recipient from outbox where dedupe_key = ${`refund-issued:${res.id}`}`
    expect(notice).toEqual([{ kind: "refund-issued", recipient: user.email }])
    const events = (await eventsOf("invoice.refunded", 1)).filter((e) => e.data.uuid === uuid)
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({ uuid, refunded_amount: "4.00", credit_note: { amount: "4.00", to: "balance" } })
  })

  test("no amount refunds all not yet refunded; then nothing is left: 422 errors.amount", async () => {
    const { uuid } = await paidInvoice()
    expect((await refunded(uuid, { amount: 250, to: "balance", reason: "a" })).amount).toBe("2.50")
    const rest = await ok(boss.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload: { to: "balance", reason: "the rest" } }))
    expect(rest.amount).toBe("7.50")
    const more = await refund(uuid, { amount: "0.01", to: "balance", reason: "too much" })
    expect(more.status).toBe(422)
    expect(Object.keys(more.body.errors)).toEqual(["amount"])
    const none = await refund(uuid, { to: "balance", reason: "nothing left" })
    expect(none.status).toBe(422)
    expect(Object.keys(none.body.errors)).toEqual(["amount"])
  })

  test("what the balance paid counts as paid: 10.00 with 4.00 from the balance refunds up to 10.00, not beyond", async () => {
    const { me, uuid } = await paidInvoice(400)
    const detail = await ok(me.billing.getInvoice({ path: { invoice: uuid } }))
    expect(detail).toMatchObject({ amount: "6.00", balance_applied: "4.00", status: "paid" })
    expect((await refund(uuid, { amount: "10.01", to: "balance", reason: "x" })).status).toBe(422)
    expect((await refunded(uuid, { amount: 1000, to: "balance", reason: "x" })).amount).toBe("10.00")
  })

  test("two refunds racing never exceed what was paid: of 6.00 + 6.00 on 10.00 exactly one is made; of five full refunds at once, one", async () => {
    const { me, uuid } = await paidInvoice()
    // statuses of a race: on the wire
    const pair = await Promise.all([
      refund(uuid, { amount: "6.00", to: "balance", reason: "first" }),
      refund(uuid, { amount: "6.00", to: "balance", reason: "second" })
    ])
    expect(pair.map((r) => r.status).sort()).toEqual([201, 422])
    const detail = await ok(me.billing.getInvoice({ path: { invoice: uuid } }))
    expect(detail.refunded_amount).toBe("6.00")
    const other = await paidInvoice()
    const five = await Promise.all(Array.from({ length: 5 }, () => refund(other.uuid, { to: "balance", reason: "all" })))
    expect(five.map((r) => r.status).sort()).toEqual([201, 422, 422, 422, 422])
    const balance = await ok(other.me.balance.getBalance())
    expect(balance).toEqual([{ currency: "USD", amount: "10.00" }])
  })

  test("only a paid invoice: pending and cancelled are 422 `Invoice is not refundable.`; an unknown one 404; a user 403", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    const pending = await refund(order.uuid, { to: "balance", reason: "x" })
    expect(pending.status).toBe(422)
    expect(pending.body).toEqual({ success: false, message: "Invoice is not refundable." })
    await ok(me.billing.cancelInvoice({ path: { invoice: order.uuid } }))
    expect((await refund(order.uuid, { to: "balance", reason: "x" })).body.message).toBe("Invoice is not refundable.")
    expect((await refund("00000000-0000-4000-8000-000000000000", { to: "balance", reason: "x" })).status).toBe(404)
    expect((await app.post(`/v1/admin/invoices/${order.uuid}/refund`, { token: user.token, body: { to: "balance", reason: "x" } })).status).toBe(403)
  })

  test("to: gateway through `manual` or `balance` is 422 errors.to, nothing recorded; bad fields are 422 naming each", async () => {
    const { me, uuid } = await paidInvoice()
    const manual = await refund(uuid, { to: "gateway", reason: "card" })
    expect(manual.status).toBe(422)
    expect(Object.keys(manual.body.errors)).toEqual(["to"])
    const byBalance = await paidInvoice(1000)
    const detail = await ok(byBalance.me.billing.getInvoice({ path: { invoice: byBalance.uuid } }))
    expect(detail.gateway).toBe("balance")
    const viaBalance = await refund(byBalance.uuid, { to: "gateway", reason: "card" })
    expect(viaBalance.status).toBe(422)
    expect(Object.keys(viaBalance.body.errors)).toEqual(["to"])
    const bad = await refund(uuid, { amount: "-1", to: "bank", reason: "" })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["amount", "reason", "to"])
    expect((await ok(me.billing.getInvoice({ path: { invoice: uuid } }))).refunded_amount).toBe("0.00")
  })

  test("end_service: true cancels the invoice's service at once (status cancelled, no current service) and emits service.cancelled", async () => {
    const { me, uuid, user } = await paidInvoice()
    const current = await ok(me.services.currentService())
    const serviceId = current.id
    await refunded(uuid, { to: "balance", reason: "fraud", end_service: true })
    const service = await ok(me.services.getService({ path: { service: serviceId } }))
    expect(service.status).toBe("cancelled")
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
    const events = (await eventsOf("service.cancelled", 1)).filter((e) => e.data.id === serviceId)
    expect(events[0]?.data).toMatchObject({ id: serviceId, status: "cancelled", at: "now" })
  })
})
