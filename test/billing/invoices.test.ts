import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option } from "effect"
import { createHmac } from "node:crypto"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// Issue 4, billing half: invoices [D36], orders [D35], payments and the webhook [D40],
// the manual gateway [D37], admin invoices [D70].
let app: TestApp
const SECRET = "whsec_test"
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0), ('Trial', '', 50, 7)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'USD'), (1, 'Yearly', 365, '100.00', 'USD'), (2, 'Monthly', 30, '5.00', 'USD')`
  await app.sql`insert into promo_codes (code, type, value, max_uses) values ('HALF', 'percentage', 50, 100)`
})
afterAll(() => app.dispose())

const sign = (raw: string, t = Math.floor(app.clock.get().getTime() / 1000)) => `t=${t},v1=${createHmac("sha256", SECRET).update(`${t}.${raw}`).digest("hex")}`

const webhook = (body: unknown, options: { t?: number; signature?: string; gateway?: string } = {}) => {
  const raw = JSON.stringify(body)
  return app.post(`/v1/webhooks/payments/${options.gateway ?? "manual"}`, {
    raw,
    headers: { "x-signature": options.signature ?? sign(raw, options.t) }
  })
}

const order = async (token: string, payload: { plan_id: number; cycle_id: number } = { plan_id: 1, cycle_id: 1 }) => {
  const me = await typedClient(app, { token })
  return ok(me.billing.placeOrder({ payload }))
}

const serviceOf = async (userId: number) =>
  app.sql<{
    id: number
    status: string
    expires_at: Date
    starts_at: Date
  }>`select id, status, expires_at, starts_at from services where user_id = ${userId} order by id`

describe("orders [D35]", () => {
  test("an order is a pending invoice with the detail fields, due in 7 days; a promo is counted", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const inv = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, promo_code: "half" } }))
    expect(inv).toMatchObject({
      amount: "5.00",
      discount: "5.00",
      currency: "USD",
      status: "pending",
      gateway: "manual",
      paid_at: null,
      promo_code: "half",
      plan: { name: "Basic" },
      cycle: { name: "Monthly", duration_days: 30 }
    })
    expect(inv.due_date.getTime() - inv.created_at.getTime()).toBe(7 * DAY)
    const [promo] = await app.sql<{ uses: number }>`select uses from promo_codes where code = 'HALF'`
    expect(promo!.uses).toBe(1)
  })

  test("a bad plan, a cycle of another plan, a bad code", async () => {
    const user = await app.createUser()
    const badPlan = await app.post("/v1/orders", { token: user.token, body: { plan_id: 99, cycle_id: 1 } })
    expect(badPlan.status).toBe(422)
    expect(badPlan.body.errors.plan_id).toEqual(["The selected plan id is invalid."])
    const otherCycle = await app.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 3 } })
    expect(otherCycle.status).toBe(422)
    expect(otherCycle.body.errors.cycle_id).toBeDefined()
    const badCode = await app.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1, promo_code: "NOPE" } })
    expect(badCode.status).toBe(422)
    expect(badCode.body).toEqual({ success: false, message: "Invalid or expired promo code." })
    expect((await app.post("/v1/orders", { body: { plan_id: 1, cycle_id: 1 } })).status).toBe(401)
  })

  test("a first order for a plan with a trial starts the service at once, due at the trial's end; paying extends it", async () => {
    const user = await app.createUser()
    // [D35] (rev. 2): a trial needs a verified e-mail
    await app.sql`update users set email_verified_at = now() where id = ${user.id}`
    const inv = await order(user.token, { plan_id: 2, cycle_id: 3 })
    const [service] = await serviceOf(user.id)
    expect(service!.status).toBe("active")
    expect(service!.expires_at.getTime() - app.clock.get().getTime()).toBe(7 * DAY)
    const me = await typedClient(app, { token: user.token })
    const detail = await ok(me.billing.getInvoice({ path: { invoice: inv.uuid } }))
    expect(detail.due_date.getTime()).toBe(service!.expires_at.getTime())
    expect((await webhook({ invoice_uuid: inv.uuid, status: "paid", transaction_id: `tx-trial-${user.id}` })).status).toBe(200)
    const [after] = await serviceOf(user.id)
    expect(after!.expires_at.getTime() - service!.expires_at.getTime()).toBe(30 * DAY)
    // a second order for the same plan has no trial
    await order(user.token, { plan_id: 2, cycle_id: 3 })
    expect(await serviceOf(user.id)).toHaveLength(1)
  })
})

describe("paying [D35] [D40]", () => {
  test("paid: a new active service starts now; a second order on the same plan extends it by one cycle", async () => {
    const user = await app.createUser()
    const first = await order(user.token)
    const paid = await webhook({ invoice_uuid: first.uuid, status: "paid", transaction_id: `tx-a-${user.id}` })
    expect(paid.status).toBe(200)
    expect(paid.body.data.status).toBe("paid")
    expect(paid.body.data.paid_at).not.toBeNull()
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.services.currentService())).status).toBe("active")
    const [s1] = await serviceOf(user.id)
    expect(s1!.expires_at.getTime() - app.clock.get().getTime()).toBe(30 * DAY)

    const second = await order(user.token, { plan_id: 1, cycle_id: 2 })
    expect((await webhook({ invoice_uuid: second.uuid, status: "paid", transaction_id: `tx-b-${user.id}` })).status).toBe(200)
    const services = await serviceOf(user.id)
    expect(services).toHaveLength(1)
    expect(services[0]!.expires_at.getTime() - s1!.expires_at.getTime()).toBe(365 * DAY)
  })

  test("signature: missing, wrong, or more than 300 s away is 401 Invalid signature. and nothing changes", async () => {
    const user = await app.createUser()
    const inv = await order(user.token)
    const body = { invoice_uuid: inv.uuid, status: "paid", transaction_id: `tx-sig-${user.id}` }
    const now = Math.floor(app.clock.get().getTime() / 1000)
    for (const res of [
      await app.post("/v1/webhooks/payments/manual", { body }),
      await webhook(body, { signature: `t=${now},v1=${"0".repeat(64)}` }),
      await webhook(body, { t: now - 301 }),
      await webhook(body, { t: now + 301 })
    ]) {
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Invalid signature." })
    }
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.billing.getInvoice({ path: { invoice: inv.uuid } }))).status).toBe("pending")
    expect(await serviceOf(user.id)).toHaveLength(0)
    // within 300 s is fine
    expect((await webhook(body, { t: now - 299 })).status).toBe(200)
  })

  test("after the signature: unknown gateway or invoice 404; status not paid, or a transaction of another invoice 422; [D123] (rev. 4): a second payment of a paid invoice, or one of a cancelled invoice, 200 and credited to the balance", async () => {
    const user = await app.createUser()
    const a = await order(user.token)
    const b = await order(user.token)
    // (`stripe` is a real gateway since [D112], with its own signature: an unknown one is `paypal`)
    expect((await webhook({ invoice_uuid: a.uuid, status: "paid", transaction_id: "x" }, { gateway: "paypal" })).status).toBe(404)
    expect((await webhook({ invoice_uuid: "00000000-0000-4000-8000-000000000000", status: "paid", transaction_id: "x" })).status).toBe(404)
    const notPaid = await webhook({ invoice_uuid: a.uuid, status: "failed", transaction_id: `tx-f-${user.id}` })
    expect(notPaid.status).toBe(422)
    expect(notPaid.body.errors.status).toBeDefined()
    expect((await webhook({ invoice_uuid: a.uuid, status: "paid", transaction_id: `tx-1-${user.id}` })).status).toBe(200)
    const reused = await webhook({ invoice_uuid: b.uuid, status: "paid", transaction_id: `tx-1-${user.id}` })
    expect(reused.status).toBe(422)
    // already paid by another transaction: 200, the service unchanged, the money on the balance ([D123] rev. 4)
    const before = await serviceOf(user.id)
    const again = await webhook({ invoice_uuid: a.uuid, status: "paid", transaction_id: `tx-2-${user.id}` })
    expect(again.status).toBe(200)
    expect(again.body.data).toMatchObject({ uuid: a.uuid, status: "paid" })
    expect(await serviceOf(user.id)).toEqual(before)
    const me = await typedClient(app, { token: user.token })
    const balance = () => ok(me.balance.getBalance())
    expect(await balance()).toEqual([{ currency: "USD", amount: "10.00" }])
    // a cancelled invoice: 200, it stays cancelled, the money on the balance ([D123]: never lost)
    await app.sql`update invoices set status = 'cancelled' where uuid = ${b.uuid}::uuid`
    const cancelled = await webhook({ invoice_uuid: b.uuid, status: "paid", transaction_id: `tx-3-${user.id}` })
    expect(cancelled.status).toBe(200)
    expect(cancelled.body.data).toMatchObject({ uuid: b.uuid, status: "cancelled" })
    expect(await balance()).toEqual([{ currency: "USD", amount: "20.00" }])
    expect(await serviceOf(user.id)).toEqual(before)
  })

  test("the same event 20 times at once extends one service once", async () => {
    const user = await app.createUser()
    const inv = await order(user.token)
    const body = { invoice_uuid: inv.uuid, status: "paid", transaction_id: `tx-burst-${user.id}` }
    const results = await Promise.all(Array.from({ length: 20 }, () => webhook(body)))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
    const services = await serviceOf(user.id)
    expect(services).toHaveLength(1)
    expect(services[0]!.expires_at.getTime() - app.clock.get().getTime()).toBe(30 * DAY)
    const [events] = await app.sql<{ n: number }>`select count(*)::int as n from payment_events where transaction_id = ${body.transaction_id}`
    expect(events!.n).toBe(1)
  })

  test("with PAYMENT_WEBHOOK_SECRET unset the webhook is 404", async () => {
    const other = await makeTestApp({ config: { paymentWebhookSecret: Option.none() }, reset: false })
    try {
      const res = await other.post("/v1/webhooks/payments/manual", { body: {} })
      expect(res.status).toBe(404)
    } finally {
      await other.dispose()
    }
  })
})

describe("invoices [D36]", () => {
  test("15 a page, newest first, meta and links exactly, status filter before page", async () => {
    const user = await app.createUser()
    for (let i = 0; i < 20; i++) {
      await order(user.token)
      app.clock.advance(1000)
    }
    const page1 = await app.get("/v1/invoices", { token: user.token })
    expect(page1.status).toBe(200)
    expect(page1.body.data).toHaveLength(15)
    expect(page1.body.meta).toEqual({ current_page: 1, last_page: 2, per_page: 15, total: 20 })
    expect(page1.body.links).toEqual({
      first: "http://localhost:3000/v1/invoices?page=1",
      last: "http://localhost:3000/v1/invoices?page=2",
      prev: null,
      next: "http://localhost:3000/v1/invoices?page=2"
    })
    const times = page1.body.data.map((i: { created_at: string }) => i.created_at)
    expect([...times].sort().reverse()).toEqual(times)
    expect(Object.keys(page1.body.data[0]).sort()).toEqual(["amount", "created_at", "currency", "gateway", "id", "paid_at", "status", "uuid"])
    const me = await typedClient(app, { token: user.token })
    const page2 = await ok(me.billing.listInvoices({ urlParams: { page: 2 } }))
    expect(page2.data).toHaveLength(5)
    expect(page2.meta).toEqual({ current_page: 2, last_page: 2, per_page: 15, total: 20 })
    expect(page2.links.prev).toBe("http://localhost:3000/v1/invoices?page=1")
    const past = await ok(me.billing.listInvoices({ urlParams: { page: 9 } }))
    expect(past.data).toEqual([])
    // past the end no row carries the total: it is still counted
    expect(past.meta).toEqual({ current_page: 9, last_page: 2, per_page: 15, total: 20 })
    const paid = await ok(me.billing.listInvoices({ urlParams: { status: "paid" } }))
    expect(paid.meta).toEqual({ current_page: 1, last_page: 1, per_page: 15, total: 0 })
    expect(paid.links.first).toBe("http://localhost:3000/v1/invoices?status=paid&page=1")
  })

  test("a bad status or page is 422", async () => {
    const user = await app.createUser()
    const status = await app.get("/v1/invoices?status=open", { token: user.token })
    expect(status.status).toBe(422)
    expect(status.body.errors.status).toBeDefined()
    for (const p of ["0", "-1", "abc"]) {
      const res = await app.get(`/v1/invoices?page=${p}`, { token: user.token })
      expect(res.status).toBe(422)
      expect(res.body.errors.page).toBeDefined()
    }
  })

  test("another user's invoice is 404 on detail and payment URL; lists never show it", async () => {
    const a = await app.createUser()
    const b = await app.createUser()
    const inv = await order(b.token)
    expect((await app.get(`/v1/invoices/${inv.uuid}`, { token: a.token })).status).toBe(404)
    expect((await app.get(`/v1/invoices/${inv.uuid}/payment-url`, { token: a.token })).status).toBe(404)
    expect((await app.get("/v1/invoices/not-a-uuid", { token: a.token })).status).toBe(404)
    const meA = await typedClient(app, { token: a.token })
    expect((await ok(meA.billing.listInvoices({ urlParams: {} }))).data).toEqual([])
  })

  test("payment URL: signed, 30 minutes, no-store; the pay page checks the signature and expiry; paid or cancelled is 422", async () => {
    const user = await app.createUser()
    const inv = await order(user.token)
    const res = await app.get(`/v1/invoices/${inv.uuid}/payment-url`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.headers.get("cache-control")).toBe("no-store")
    expect(res.body.data.gateway).toBe("manual")
    const url = new URL(res.body.data.url)
    expect(url.pathname).toBe(`/pay/${inv.uuid}`)
    expect(Number(url.searchParams.get("expires")) * 1000 - app.clock.get().getTime()).toBe(30 * 60 * 1000)
    expect(new Date(res.body.data.expires_at).getTime()).toBe(Number(url.searchParams.get("expires")) * 1000)

    const page = await app.get(`${url.pathname}${url.search}`)
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toContain("text/html")
    expect(page.text).toContain("10.00 USD")
    expect(page.text).toContain(inv.uuid)
    const tampered = await app.get(`${url.pathname}?expires=${url.searchParams.get("expires")}&signature=${"0".repeat(64)}`)
    expect(tampered.status).toBe(403)
    app.clock.advance(31 * 60 * 1000)
    expect((await app.get(`${url.pathname}${url.search}`)).status).toBe(403)

    expect((await webhook({ invoice_uuid: inv.uuid, status: "paid", transaction_id: `tx-url-${user.id}` })).status).toBe(200)
    const paid = await app.get(`/v1/invoices/${inv.uuid}/payment-url`, { token: user.token })
    expect(paid.status).toBe(422)
    expect(paid.body).toEqual({ success: false, message: "Invoice is not payable." })
  })
})

describe("admin invoices [D70]", () => {
  test("create an invoice for a user, mark it paid once even twice at once; 401, 403, 404", async () => {
    const admin = await app.createUser({ role: "admin" })
    const user = await app.createUser()
    expect((await app.post(`/v1/admin/users/${user.id}/invoices`, { body: { plan_id: 1, cycle_id: 1 } })).status).toBe(401)
    expect((await app.post(`/v1/admin/users/${user.id}/invoices`, { token: user.token, body: { plan_id: 1, cycle_id: 1 } })).status).toBe(403)
    expect((await app.post(`/v1/admin/users/999999/invoices`, { token: admin.token, body: { plan_id: 1, cycle_id: 1 } })).status).toBe(404)
    const staff = await typedClient(app, { token: admin.token })
    const created = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1, amount: "7.5" } }))
    expect(created).toMatchObject({ amount: "7.50", status: "pending" })
    const uuid = created.uuid
    // both answer the declared 200 (the typed client decodes no other status as a success)
    const both = await Promise.all([1, 2].map(() => ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))))
    expect(both).toHaveLength(2)
    expect(both[0]!.status).toBe("paid")
    const services = await serviceOf(user.id)
    expect(services).toHaveLength(1)
    expect(services[0]!.expires_at.getTime() - app.clock.get().getTime()).toBe(30 * DAY)
    expect((await app.post(`/v1/admin/invoices/00000000-0000-4000-8000-000000000000/mark-paid`, { token: admin.token })).status).toBe(404)
    await app.sql`update invoices set status = 'cancelled' where user_id = ${user.id} and status = 'pending'`
    const cancelled = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1, status: "cancelled" } }))
    const refused = await app.post(`/v1/admin/invoices/${cancelled.uuid}/mark-paid`, { token: admin.token })
    expect(refused.status).toBe(422)
    expect(refused.body.message).toBe("Invoice is not payable.")
  })
})
