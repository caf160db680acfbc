import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"

// [D70] admin invoices and mark-paid, [D35] activation through mark-paid, [D26] [D37] the pay page.
let app: TestApp
let admin: { id: number; token: string }
let staff: TypedClient
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days, is_active) values ('Basic', '', 100, 0, true), ('Legacy', '', 10, 0, false)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'EUR'), (2, 'Quarterly', 90, '25.00', 'EUR')`
  await app.sql`insert into promo_codes (code, type, value) values ('TENOFF', 'percentage', 10)`
})
afterAll(() => app.dispose())

const create = (userId: number, body: Record<string, unknown>, token = admin.token) => app.post(`/v1/admin/users/${userId}/invoices`, { token, body })

const servicesOf = (userId: number) =>
  app.sql<{
    id: number
    status: string
    expires_at: Date
    plan_id: number
  }>`select id, status, expires_at, plan_id from services where user_id = ${userId} order by id`

describe("POST /v1/admin/users/{user}/invoices [D70]", () => {
  test("defaults: the cycle's price, pending, manual, due in 7 days; the user sees it", async () => {
    const user = await app.createUser()
    // the typed client decodes the declared 201 `{success: true, data}` envelope only
    const inv = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1 } }))
    expect(inv).toMatchObject({
      amount: "10.00",
      discount: "0.00",
      currency: "EUR",
      status: "pending",
      gateway: "manual",
      paid_at: null,
      promo_code: null,
      plan: { name: "Basic" },
      cycle: { name: "Monthly", duration_days: 30 }
    })
    expect(inv.due_date.getTime() - app.clock.get().getTime()).toBe(7 * DAY)
    const me = await typedClient(app, { token: user.token })
    expect(await ok(me.billing.getInvoice({ path: { invoice: inv.uuid } }))).toEqual(inv)
  })

  test("status paid: paid at once and the service is active; a promo prices it; an inactive plan is allowed", async () => {
    const user = await app.createUser()
    const paid = await ok(
      staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1, status: "paid", promo_code: "tenoff" } })
    )
    expect(paid).toMatchObject({ status: "paid", amount: "9.00", discount: "1.00", promo_code: "tenoff" })
    expect(paid.paid_at).not.toBeNull()
    const [service] = await servicesOf(user.id)
    expect(service!.status).toBe("active")
    expect(service!.expires_at.getTime() - app.clock.get().getTime()).toBe(30 * DAY)
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.services.currentService())).id).toBe(service!.id)

    const legacy = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 2, cycle_id: 2, amount: 12 } }))
    expect(legacy).toMatchObject({ amount: "12.00", plan: { name: "Legacy" } })
  })

  test("401, 403 Forbidden., unknown user 404, bad fields 422", async () => {
    const user = await app.createUser()
    expect((await create(user.id, { plan_id: 1, cycle_id: 1 }, "")).status).toBe(401)
    const forbidden = await create(user.id, { plan_id: 1, cycle_id: 1 }, user.token)
    expect(forbidden.status).toBe(403)
    expect(forbidden.body).toEqual({ success: false, message: "Forbidden." })
    expect((await create(987654, { plan_id: 1, cycle_id: 1 })).status).toBe(404)
    const bad = await create(user.id, { plan_id: 1, cycle_id: 2, status: "refunded", amount: "1.234" })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.status).toEqual(["The selected status is invalid."])
    const missing = await create(user.id, {})
    expect(missing.status).toBe(422)
    expect(missing.body.errors.plan_id).toBeDefined()
    expect(await app.sql`select id from invoices where user_id = ${user.id}`).toHaveLength(0)
  })
})

describe("POST /v1/admin/invoices/{invoice}/mark-paid [D70] [D35]", () => {
  test("401, 403; marks a user's order paid and extends their service on the same plan by the cycle", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const first = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: 1, cycle_id: 1, status: "paid" } }))
    const [before] = await servicesOf(user.id)
    const { uuid } = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    expect((await app.post(`/v1/admin/invoices/${uuid}/mark-paid`)).status).toBe(401)
    expect((await app.post(`/v1/admin/invoices/${uuid}/mark-paid`, { token: user.token })).status).toBe(403)
    expect((await ok(me.billing.getInvoice({ path: { invoice: uuid } }))).status).toBe("pending")

    expect(await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).toMatchObject({ uuid, status: "paid" })
    const after = await servicesOf(user.id)
    expect(after).toHaveLength(1)
    expect(after[0]!.expires_at.getTime() - before!.expires_at.getTime()).toBe(30 * DAY)
    // marking it again changes nothing
    expect(await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).toMatchObject({ uuid, status: "paid" })
    expect(await servicesOf(user.id)).toEqual(after)
    expect(first.status).toBe("paid")
    expect((await app.post(`/v1/admin/invoices/not-a-uuid/mark-paid`, { token: admin.token })).status).toBe(404)
  })

  test("an expired service linked to a renewal invoice is extended from now and active again", async () => {
    const user = await app.createUser()
    const now = app.clock.get().getTime()
    const [service] = await app.sql<{ id: number }>`insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew)
      values (${user.id}, 1, 1, 'expired', ${new Date(now - 40 * DAY)}, ${new Date(now - 10 * DAY)}, true) returning id`
    const [inv] = await app.sql<{ uuid: string }>`insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, gateway, due_date)
      values (${user.id}, ${service!.id}, 1, 1, '10.00', 'EUR', 'pending', 'manual', ${new Date(now)}) returning uuid::text`
    await ok(staff.billingAdmin.markPaid({ path: { invoice: inv!.uuid } }))
    const after = await servicesOf(user.id)
    expect(after).toHaveLength(1)
    expect(after[0]!.status).toBe("active")
    expect(after[0]!.expires_at.getTime() - now).toBe(30 * DAY)
  })
})

describe("the pay page [D26] [D37]", () => {
  test("an accessible HTML page with the amount, currency, plan, status and bank-transfer reference; 403 HTML otherwise", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const { uuid } = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, promo_code: "TENOFF" } }))
    const url = new URL((await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))).url)
    expect(url.origin).toBe("http://localhost:3000")
    const page = await app.get(`${url.pathname}${url.search}`)
    expect(page.status).toBe(200)
    expect(page.headers.get("content-type")).toContain("text/html")
    expect(page.text).toMatch(/<html lang="en">/)
    expect(page.text).toMatch(/<title>[^<]+<\/title>/)
    expect(page.text).toMatch(/<h1>[^<]+<\/h1>/)
    expect(page.text).toContain("9.00 EUR")
    expect(page.text).toContain("Basic")
    expect(page.text).toContain("pending")
    expect(page.text.toLowerCase()).toContain("bank transfer")
    expect(page.text).toContain(uuid)

    // a signature made for another invoice does not open this one
    const other = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    const forged = await app.get(`/pay/${other.uuid}${url.search}`)
    expect(forged.status).toBe(403)
    expect(forged.headers.get("content-type")).toContain("text/html")
    expect(forged.text.toLowerCase()).toMatch(/invalid or (has )?expired/)
    expect(forged.text).not.toContain("9.00")
    // a later expiry with the old signature is refused too
    const later = await app.get(`${url.pathname}?expires=${Number(url.searchParams.get("expires")) + 3600}&signature=${url.searchParams.get("signature")}`)
    expect(later.status).toBe(403)
    expect((await app.get(url.pathname)).status).toBe(403)

    // once paid, the page says so (still within the link's life)
    await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))
    const paid = await app.get(`${url.pathname}${url.search}`)
    expect(paid.status).toBe(200)
    expect(paid.text).toContain("paid")
    expect(paid.text.toLowerCase()).not.toContain("bank transfer")
  })
})
