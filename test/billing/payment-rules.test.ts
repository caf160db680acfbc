import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D123] for the `manual` gateway's webhook ([D40], rev. 4; issue 34): the same event twice changes
// nothing; a second, different payment of a paid invoice, a payment of a cancelled invoice, an
// underpayment and a payment in another currency go to the payer's balance (the invoice as it
// was); an overpayment pays the invoice and the excess goes to the balance; a wrong signature is
// 401 and changes nothing. These replace the 422s that [D40] (rev. 2) gave for differing money.
let app: TestApp
const SECRET = "whsec_test"

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'USD')`
})
afterAll(() => app.dispose())

const send = (body: Record<string, unknown>, secret = SECRET) => {
  const raw = JSON.stringify(body)
  const t = Math.floor(app.clock.get().getTime() / 1000)
  return app.post("/v1/webhooks/payments/manual", {
    raw,
    headers: { "x-signature": `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex")}` }
  })
}

const order = async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  // the typed client decodes only the declared 201
  const res = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  return { user, me, uuid: res.uuid as string }
}

const balanceOf = async (token: string) => {
  const me = await typedClient(app, { token })
  return ok(me.balance.getBalance())
}
const ledgerOf = async (token: string) => {
  const me = await typedClient(app, { token })
  return (await ok(me.balance.listBalanceTransactions({ urlParams: {} }))).data.map((t) => [t.amount, t.currency, t.reason])
}
const servicesOf = (userId: number) => app.sql<{ id: number; expires_at: Date }>`select id, expires_at from services where user_id = ${userId}`

describe("[D123] for the manual gateway (issue 34)", () => {
  test("the same event twice: the second changes nothing", async () => {
    const { user, uuid } = await order()
    const body = { invoice_uuid: uuid, status: "paid", transaction_id: `tx-twice-${uuid}`, amount: "12.00", currency: "USD" }
    expect((await send(body)).status).toBe(200)
    const services = await servicesOf(user.id)
    const again = await send(body)
    expect(again.status).toBe(200)
    expect(again.body.data).toMatchObject({ uuid, status: "paid" })
    expect(await servicesOf(user.id)).toEqual(services)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "2.00" }])
  }, 60_000)

  test("an overpayment pays the invoice; the excess goes to the balance", async () => {
    const { user, uuid } = await order()
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-over-${uuid}`, amount: "15.50", currency: "USD" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ uuid, status: "paid", amount: "10.00" })
    expect(await servicesOf(user.id)).toHaveLength(1)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "5.50" }])
    expect(await ledgerOf(user.token)).toEqual([["5.50", "USD", "Overpayment of invoice"]])
  }, 60_000)

  test("an underpayment goes to the balance and the invoice stays pending", async () => {
    const { user, uuid } = await order()
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-under-${uuid}`, amount: "4", currency: "usd" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ uuid, status: "pending", amount: "10.00" })
    expect(await servicesOf(user.id)).toHaveLength(0)
    expect(await ledgerOf(user.token)).toEqual([["4.00", "USD", "Underpayment of invoice"]])
  }, 60_000)

  test("a payment in another currency goes to the balance in that currency; the invoice stays pending", async () => {
    const { user, uuid } = await order()
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-eur-${uuid}`, amount: "10.00", currency: "EUR" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ uuid, status: "pending" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "EUR", amount: "10.00" }])
    expect(await ledgerOf(user.token)).toEqual([["10.00", "EUR", "Payment in another currency"]])
  }, 60_000)

  test("a second, different payment of a paid invoice goes to the balance; the service is extended once", async () => {
    const { user, uuid } = await order()
    expect((await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-first-${uuid}` })).status).toBe(200)
    const services = await servicesOf(user.id)
    const second = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-second-${uuid}` })
    expect(second.status).toBe(200)
    expect(await servicesOf(user.id)).toEqual(services)
    expect(await ledgerOf(user.token)).toEqual([["10.00", "USD", "Second payment of a paid invoice"]])
  }, 60_000)

  test("a payment of an invoice the user cancelled: 200, credited to the balance, the invoice stays cancelled", async () => {
    const { me, user, uuid } = await order()
    expect((await ok(me.billing.cancelInvoice({ path: { invoice: uuid } }))).status).toBe("cancelled")
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-cancelled-${uuid}`, amount: "10.00", currency: "USD" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ uuid, status: "cancelled" })
    expect(await servicesOf(user.id)).toHaveLength(0)
    expect(await ledgerOf(user.token)).toEqual([["10.00", "USD", "Payment for a cancelled invoice"]])
  }, 60_000)

  test("a wrong signature: 401, nothing changed", async () => {
    const { user, uuid } = await order()
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-forged-${uuid}`, amount: "99.00", currency: "USD" }, "whsec_other")
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Invalid signature." })
    expect(await balanceOf(user.token)).toEqual([])
    expect(await app.sql`select 1 from payment_events where transaction_id = ${`tx-forged-${uuid}`}`).toHaveLength(0)
  }, 60_000)

  test("20 different payments of one invoice at once: one pays it, 19 go to the balance, the ledger sums to it", async () => {
    const { user, uuid } = await order()
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-burst-${i}-${uuid}` }))
    )
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    expect(await servicesOf(user.id)).toHaveLength(1)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "190.00" }])
    const [sum] = await app.sql<{ total: string }>`select sum(amount)::text as total from balance_transactions where user_id = ${user.id}`
    expect(Number(sum!.total)).toBe(190)
  }, 60_000)
})
