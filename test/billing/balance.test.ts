import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D109] the balance: per currency, a ledger that always sums to it, applied to every new invoice
// (order, renewal), an invoice covered whole paid at once (gateway `balance`), a cancelled invoice
// giving its balance_applied back, admin credits and debits (audited, [D100]), and two invoices
// that never spend the same money (real parallel requests; run on PostgreSQL too).
let app: TestApp
let admin: { id: number; token: string }
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'USD'), (1, 'Monthly EUR', 30, '9.00', 'EUR')`
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

/** an admin's credit (or debit) in cents through the typed client; it decodes only the declared 201 */
const credit = async (userId: number, cents: number, currency = "USD", reason = "Goodwill") => {
  const boss = await typedClient(app, { token: admin.token })
  return ok(boss.balanceAdmin.adjustBalance({ path: { user: userId }, payload: { amount: cents, currency, reason } }))
}
/** the same on the wire, for the 4xx envelopes and the amount as a JSON number */
const creditWire = (userId: number, amount: string | number, currency = "USD", reason = "Goodwill") =>
  app.post(`/v1/admin/users/${userId}/balance`, { token: admin.token, body: { amount, currency, reason } })

const balanceOf = async (token: string) => {
  const me = await typedClient(app, { token })
  return ok(me.balance.getBalance())
}
const ledgerOf = async (token: string, page?: number) => {
  const me = await typedClient(app, { token })
  return ok(me.balance.listBalanceTransactions({ urlParams: page === undefined ? {} : { page } }))
}

/** the ledger's sum per currency equals the balance ([D109]'s invariant), read from the database */
const expectLedgerSumsToBalance = async (userId: number) => {
  const rows = await app.sql<{ currency: string; balance: string; ledger: string }>`
    select b.currency, b.amount::text as balance, coalesce((select sum(t.amount) from balance_transactions t
      where t.user_id = b.user_id and t.currency = b.currency), 0)::numeric(12,2)::text as ledger
    from balances b where b.user_id = ${userId}`
  for (const r of rows) expect(r.ledger).toBe(r.balance)
}

describe("admin credits and debits [D109] [D100]", () => {
  test("a credit answers 201 with the new balance and its ledger row; the balance lists it; the write is audited", async () => {
    const user = await app.createUser()
    const res = await credit(user.id, 1550, "usd", "Compensation for the outage")
    expect(res).toMatchObject({
      currency: "USD",
      amount: "15.50",
      transaction: { amount: "15.50", currency: "USD", reason: "Compensation for the outage", invoice_uuid: null }
    })
    expect(typeof res.transaction.id).toBe("number")
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "15.50" }])
    // a JSON number is an amount too
    const debit = await creditWire(user.id, -5.25)
    expect(debit.status).toBe(201)
    expect(debit.body.data).toMatchObject({ amount: "10.25", transaction: { amount: "-5.25" } })
    const audit = await app.sql<{ resource: string; actor_id: number }>`
      select resource, actor_id from audit_log where action = 'POST /v1/admin/users/:user/balance' and resource = ${`user:${user.id}`}`
    expect(audit).toEqual([
      { resource: `user:${user.id}`, actor_id: admin.id },
      { resource: `user:${user.id}`, actor_id: admin.id }
    ])
    await expectLedgerSumsToBalance(user.id)
  })

  test("a debit below zero is 422 errors.amount `Insufficient balance.` and changes nothing; so is a debit of a currency never credited", async () => {
    const user = await app.createUser()
    await credit(user.id, 300)
    const res = await creditWire(user.id, "-3.01")
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ amount: ["Insufficient balance."] })
    const eur = await creditWire(user.id, "-1.00", "EUR")
    expect(eur.status).toBe(422)
    expect(eur.body.errors).toEqual({ amount: ["Insufficient balance."] })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "3.00" }])
    const ledger = await ledgerOf(user.token)
    expect(ledger.data).toHaveLength(1)
  })

  test("bad input: 0.00, three decimals, a bad currency, a missing or too long reason: 422 naming each; unknown user 404; a user 403", async () => {
    const user = await app.createUser()
    const zero = await creditWire(user.id, "0.00")
    expect(zero.status).toBe(422)
    expect(zero.body.errors.amount).toEqual(["The amount field must not be zero."])
    const bad = await app.post(`/v1/admin/users/${user.id}/balance`, { token: admin.token, body: { amount: "1.234", currency: "US", reason: "x".repeat(256) } })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["amount", "currency", "reason"])
    const missing = await app.post(`/v1/admin/users/${user.id}/balance`, { token: admin.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors.reason).toEqual(["The reason field is required."])
    expect((await creditWire(999_999, "1.00")).status).toBe(404)
    expect((await app.post(`/v1/admin/users/${user.id}/balance`, { token: user.token, body: { amount: "1.00", currency: "USD", reason: "x" } })).status).toBe(
      403
    )
  })
})

describe("the balance pays invoices [D109]", () => {
  test("an order takes what it can: amount is what is left, balance_applied shows the rest, the ledger names the invoice; cancelling gives it back", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    await credit(user.id, 400)
    // the typed client decodes only the declared 201
    const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    expect(order).toMatchObject({ amount: "6.00", balance_applied: "4.00", status: "pending", gateway: "manual" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "0.00" }])
    const ledger = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
    expect(ledger.data[0]).toMatchObject({ amount: "-4.00", currency: "USD", invoice_uuid: order.uuid })
    // an order in another currency takes nothing from the USD balance
    const cancelled = await ok(me.billing.cancelInvoice({ path: { invoice: order.uuid } }))
    expect(cancelled.status).toBe("cancelled")
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "4.00" }])
    const after = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
    expect(after.data[0]).toMatchObject({ amount: "4.00", reason: "Invoice cancelled", invoice_uuid: order.uuid })
    const eur = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 2 } }))
    expect(eur).toMatchObject({ amount: "9.00", balance_applied: "0.00", currency: "EUR" })
    await expectLedgerSumsToBalance(user.id)
  })

  test("an invoice the balance covers whole is paid at once with gateway `balance`, activates the service, and writes a receipt", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    await credit(user.id, 2500)
    const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    expect(order).toMatchObject({ amount: "0.00", balance_applied: "10.00", status: "paid", gateway: "balance" })
    expect(order.paid_at).not.toBeNull()
    const current = await ok(me.services.currentService())
    expect(current).toMatchObject({ status: "active", plan: { id: 1 } })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "15.00" }])
    // the receipt ([D96]) says what the balance paid; the jobs send it
    const receipt = () => app.outbox.find((m) => m.to === user.email && m.subject === `Receipt for invoice ${order.uuid}`)
    for (let i = 0; i < 20 && receipt() === undefined; i++) await app.run(runJobsOnce)
    expect(receipt()?.text).toContain("From your balance: 10.00 USD")
    // paid: it cannot be cancelled, and nothing goes back
    expect((await app.post(`/v1/invoices/${order.uuid}/cancel`, { token: user.token })).status).toBe(422)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "15.00" }])
    await expectLedgerSumsToBalance(user.id)
  })

  test("two orders at once on a balance that pays one: exactly one is paid by it, the other pays nothing from it; never negative", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    await credit(user.id, 1000)
    // real parallel requests; each typed call decodes only the declared 201
    const results = await Promise.all(Array.from({ length: 4 }, () => ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))))
    expect(results).toHaveLength(4)
    const applied = results.map((r) => r.balance_applied).sort()
    expect(applied).toEqual(["0.00", "0.00", "0.00", "10.00"])
    expect(results.filter((r) => r.status === "paid")).toHaveLength(1)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "0.00" }])
    await expectLedgerSumsToBalance(user.id)
  })

  test("partial balances race too: 3 orders of 10.00 on 25.00 spend exactly 25.00 in total", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    await credit(user.id, 2500)
    const results = await Promise.all(Array.from({ length: 3 }, () => ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))))
    const cents = results.map((r) => Math.round(Number(r.balance_applied) * 100)).sort((a, b) => a - b)
    expect(cents).toEqual([500, 1000, 1000])
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "0.00" }])
    await expectLedgerSumsToBalance(user.id)
  })

  test("the ledger pages like invoices: newest first, 15 a page, meta and links", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    for (let i = 1; i <= 16; i++) await credit(user.id, i * 100)
    const p1 = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
    expect(p1.meta).toEqual({ current_page: 1, last_page: 2, per_page: 15, total: 16 })
    expect(p1.data[0]).toMatchObject({ amount: "16.00" })
    expect(p1.links.next).toBe("http://localhost:3000/v1/account/balance/transactions?page=2")
    const p2 = await ok(me.balance.listBalanceTransactions({ urlParams: { page: 2 } }))
    expect(p2.data).toHaveLength(1)
    expect(p2.data[0]).toMatchObject({ amount: "1.00" })
    // issue 27: a page past the end still counts the total
    const p3 = await ledgerOf(user.token, 3)
    expect(p3.data).toEqual([])
    expect(p3.meta).toEqual({ current_page: 3, last_page: 2, per_page: 15, total: 16 })
    expect((await app.get("/v1/account/balance/transactions?page=0", { token: user.token })).status).toBe(422)
    expect((await app.get("/v1/account/balance")).status).toBe(401)
  })
  test("a renewal takes from the balance (whole: paid at once, the service extended); an overdue invoice cancelled by the jobs gives it back", async () => {
    // the clock moves: this test comes last, with its own admin whose token is issued at the new time
    const start = new Date(app.clock.get().getTime() + 1000 * DAY)
    app.clock.set(start)
    admin = await app.createUser({ role: "admin" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    await credit(user.id, 1000)
    const first = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    expect(first.status).toBe("paid")
    const expiresAt = new Date(start.getTime() + 30 * DAY)
    await credit(user.id, 1000)
    app.clock.set(new Date(expiresAt.getTime() - 2 * DAY))
    await app.run(runJobsOnce)
    const invoices = await ok(me.billing.listInvoices({ urlParams: {} }))
    expect(invoices.data).toHaveLength(2)
    const renewal = await ok(me.billing.getInvoice({ path: { invoice: invoices.data[0]!.uuid } }))
    expect(renewal).toMatchObject({ status: "paid", gateway: "balance", balance_applied: "10.00", amount: "0.00" })
    const service = await ok(me.services.currentService())
    expect(service.expires_at).toBe(new Date(expiresAt.getTime() + 30 * DAY).toISOString())

    // a pending order partly paid by the balance, left unpaid past its due date
    await credit(user.id, 300)
    const pending = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    expect(pending).toMatchObject({ status: "pending", balance_applied: "3.00", amount: "7.00" })
    app.clock.advance(8 * DAY)
    await app.run(runJobsOnce)
    const gone = await ok(me.billing.getInvoice({ path: { invoice: pending.uuid } }))
    expect(gone.status).toBe("cancelled")
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "3.00" }])
    await expectLedgerSumsToBalance(user.id)
  })
})
