import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D33] [D35] [D36]: promo uses under concurrent orders, fixed promos, the status filter kept in
// the links of a second page, exact messages.
let app: TestApp

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0), ('Other', '', 10, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'USD'), (2, 'Monthly', 30, '3.00', 'USD')`
})
afterAll(() => app.dispose())

describe("promo codes on orders [D33] [D35]", () => {
  test("10 users ordering at once with a code of max_uses 3: exactly 3 orders carry it, uses = 3", async () => {
    await app.sql`insert into promo_codes (code, type, value, max_uses) values ('RUSH', 'percentage', 10, 3)`
    const users = await Promise.all(Array.from({ length: 10 }, () => app.createUser()))
    const results = await Promise.all(users.map((u) => app.post("/v1/orders", { token: u.token, body: { plan_id: 1, cycle_id: 1, promo_code: "RUSH" } })))
    const statuses = results.map((r) => r.status).sort()
    expect(statuses).toEqual([201, 201, 201, 422, 422, 422, 422, 422, 422, 422])
    for (const r of results.filter((r) => r.status === 422)) {
      expect(r.body).toEqual({ success: false, message: "Invalid or expired promo code." })
    }
    for (const r of results.filter((r) => r.status === 201)) {
      expect(r.body.data).toMatchObject({ amount: "9.00", discount: "1.00", promo_code: "RUSH" })
    }
    const [promo] = await app.sql<{ uses: number }>`select uses from promo_codes where code = 'RUSH'`
    expect(promo!.uses).toBe(3)
    const [inv] = await app.sql<{ n: number }>`select count(*)::int as n from invoices i join promo_codes p on p.id = i.promo_code_id where p.code = 'RUSH'`
    expect(inv!.n).toBe(3)
  })

  test("a fixed promo larger than the price floors at 0.00; the code is echoed as submitted; a code for another plan is refused", async () => {
    const [promo] = await app.sql<{ id: number }>`insert into promo_codes (code, type, value) values ('BIG', 'fixed', 50) returning id`
    await app.sql`insert into promo_code_plans (promo_code_id, plan_id) values (${promo!.id}, 2)`
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const order = await ok(me.billing.placeOrder({ payload: { plan_id: 2, cycle_id: 2, promo_code: "big" } }))
    expect(order).toMatchObject({ amount: "0.00", discount: "3.00", promo_code: "big", currency: "USD", gateway: "manual" })
    const [row] = await app.sql<{
      promo_code_id: number
      amount: string
    }>`select promo_code_id, amount::text from invoices where uuid = ${order.uuid}::uuid`
    expect(row!.promo_code_id).toBe(promo!.id)
    const other = await app.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1, promo_code: "BIG" } })
    expect(other.status).toBe(422)
    expect(other.body.message).toBe("Invalid or expired promo code.")
  })

  test("missing fields: 422 naming each", async () => {
    const user = await app.createUser()
    const res = await app.post("/v1/orders", { token: user.token, body: {} })
    expect(res.status).toBe(422)
    expect(res.body.errors.plan_id).toEqual(["The plan id field is required."])
    expect(res.body.errors.cycle_id).toEqual(["The cycle id field is required."])
  })
})

describe("invoice list filter [D36]", () => {
  test("20 paid invoices: status=paid gives last_page 2 and links with ?status=paid&page=N; pending stays apart", async () => {
    const user = await app.createUser()
    for (let i = 0; i < 20; i++) {
      await app.sql`insert into invoices (user_id, plan_id, cycle_id, amount, currency, status, gateway, due_date, paid_at, transaction_id, created_at)
        values (${user.id}, 1, 1, '10.00', 'USD', 'paid', 'manual', now(), now(), ${`tx-list-${i}`}, ${new Date(Date.UTC(2026, 0, 1 + i))})`
    }
    await app.sql`insert into invoices (user_id, plan_id, cycle_id, amount, currency, status, gateway, due_date, created_at)
      values (${user.id}, 1, 1, '10.00', 'USD', 'pending', 'manual', now(), ${new Date(Date.UTC(2026, 1, 1))})`
    const base = "http://localhost:3000/v1/invoices"
    const me = await typedClient(app, { token: user.token })
    const p2 = await ok(me.billing.listInvoices({ urlParams: { status: "paid", page: 2 } }))
    expect(p2.meta).toEqual({ current_page: 2, last_page: 2, per_page: 15, total: 20 })
    expect(p2.links).toEqual({
      first: `${base}?status=paid&page=1`,
      last: `${base}?status=paid&page=2`,
      prev: `${base}?status=paid&page=1`,
      next: null
    })
    expect(p2.data).toHaveLength(5)
    expect(p2.data.every((i) => i.status === "paid")).toBe(true)
    // newest first: page 2 holds the 5 oldest
    expect(p2.data[4]!.created_at.toISOString()).toBe("2026-01-01T00:00:00.000Z")
    // the query in another order: the links still put the filter before the page
    const p1 = await ok(me.billing.listInvoices({ urlParams: { page: 1, status: "paid" } }))
    expect(p1.links.next).toBe(`${base}?status=paid&page=2`)
    expect(p1.data[0]!.created_at.toISOString()).toBe("2026-01-20T00:00:00.000Z")
    expect((await ok(me.billing.listInvoices({ urlParams: { status: "pending" } }))).meta.total).toBe(1)
    const all = await ok(me.billing.listInvoices({ urlParams: {} }))
    expect(all.meta).toEqual({ current_page: 1, last_page: 2, per_page: 15, total: 21 })
  })

  test("exact 422 messages and 401 without a token", async () => {
    const user = await app.createUser()
    const bad = await app.get("/v1/invoices?status=overdue", { token: user.token })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.status).toEqual(["The selected status is invalid."])
    const page = await app.get("/v1/invoices?page=1.5", { token: user.token })
    expect(page.status).toBe(422)
    expect(page.body.errors.page).toBeDefined()
    expect((await app.get("/v1/invoices")).status).toBe(401)
    const me = await typedClient(app, { token: user.token })
    const empty = await ok(me.billing.listInvoices({ urlParams: {} }))
    expect(empty.meta).toEqual({ current_page: 1, last_page: 1, per_page: 15, total: 0 })
    expect(empty.links).toEqual({
      first: "http://localhost:3000/v1/invoices?page=1",
      last: "http://localhost:3000/v1/invoices?page=1",
      prev: null,
      next: null
    })
  })
})
