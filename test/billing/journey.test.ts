import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"

// Issue 4 "done when": an operator sets up the catalogue through the admin API, a user orders
// with a promo, pays through a signed webhook and sees the service and the paid invoice; plus
// the manual gateway's links [D37], trial and renewal interplay [D35][D80], promo give-back [D33].
let app: TestApp
let admin: { token: string }
let staff: TypedClient
const SECRET = "whsec_test"
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

const signed = (body: unknown) => {
  const raw = JSON.stringify(body)
  const t = Math.floor(app.clock.get().getTime() / 1000)
  const v1 = createHmac("sha256", SECRET).update(`${t}.${raw}`).digest("hex")
  return app.post("/v1/webhooks/payments/manual", { raw, headers: { "x-signature": `t=${t},v1=${v1}` } })
}

const plan = async (fields: { name?: string; trial_days?: number } = {}) => {
  const p = await ok(
    staff.catalogAdmin.createPlan({
      payload: { name: "Pro", description: "Fast", bandwidth_limit_gb: 500, speed_limit_mbps: 100, trial_days: 0, is_active: true, ...fields }
    })
  )
  const c = await ok(staff.catalogAdmin.createCycle({ path: { plan: p.id }, payload: { name: "Monthly", duration_days: 30, price: 1999, currency: "EUR" } }))
  return { planId: p.id, cycleId: c.id }
}

const usesOf = async (code: string) => {
  const [row] = await app.sql<{ uses: number }>`select uses from promo_codes where lower(code) = lower(${code})`
  return row!.uses
}

describe("the whole flow through the API", () => {
  test("admin plan and cycle, order with a promo, pay page, signed webhook: active service and paid invoice", async () => {
    const { cycleId, planId } = await plan()
    await ok(staff.catalogAdmin.createPromo({ payload: { code: "SPRING25", type: "percentage", value: 2500, max_uses: 10 } }))
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })

    const ordered = await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId, promo_code: "spring25" } }))
    // 25 % of 19.99 = 4.9975 -> 5.00 (half-up on the discount), 14.99 to pay
    expect(ordered).toMatchObject({ amount: "14.99", discount: "5.00", currency: "EUR", status: "pending", promo_code: "spring25" })
    expect(await usesOf("SPRING25")).toBe(1)
    const uuid = ordered.uuid

    const url = new URL((await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))).url)
    expect(`${url.origin}`).toBe(app.config.publicUrl)
    const pay = await app.get(`${url.pathname}${url.search}`)
    expect(pay.status).toBe(200)
    expect(pay.headers.get("cache-control")).toBe("no-store")
    expect(pay.text).toContain("14.99 EUR")
    expect(pay.text).toContain("Pro (Monthly)")
    expect(pay.text).toContain("pending")
    expect(pay.text).toContain(`reference <code>${uuid}</code>`)

    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
    const paid = await signed({ invoice_uuid: uuid, status: "paid", transaction_id: "bank-0001" })
    expect(paid.status).toBe(200)
    expect(paid.body.data).toMatchObject({ uuid, status: "paid", amount: "14.99" })

    const current = await ok(me.services.currentService())
    expect(current).toMatchObject({
      status: "active",
      plan: { id: planId, name: "Pro", bandwidth_limit_gb: 500, speed_limit_mbps: 100 }
    })
    expect(new Date(current.expires_at).getTime() - app.clock.get().getTime()).toBe(30 * DAY)
    const list = await ok(me.billing.listInvoices({ urlParams: { status: "paid" } }))
    expect(list.data).toHaveLength(1)
    expect(list.data[0]).toMatchObject({ uuid, status: "paid" })
    expect(list.data[0]!.paid_at?.toISOString()).toBe(app.clock.get().toISOString())

    // the paid invoice's page now says there is nothing to pay
    const after = await app.get(`${url.pathname}${url.search}`)
    expect(after.text).toContain("nothing to pay")
  })
})

describe("manual gateway links [D37]", () => {
  test("a signature is bound to its invoice and its expiry; a cancelled invoice has no payment URL", async () => {
    const { cycleId, planId } = await plan({ name: "Links" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const a = (await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))).uuid
    const b = (await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))).uuid
    const url = new URL((await ok(me.billing.paymentUrl({ path: { invoice: a } }))).url)
    const expires = Number(url.searchParams.get("expires"))
    const signature = url.searchParams.get("signature")!
    expect((await app.get(`/pay/${a}?expires=${expires}&signature=${signature}`)).status).toBe(200)
    // a's signature on b, a later expiry, no signature, a malformed uuid: one 403 page
    for (const path of [
      `/pay/${b}?expires=${expires}&signature=${signature}`,
      `/pay/${a}?expires=${expires + 3600}&signature=${signature}`,
      `/pay/${a}?expires=${expires}`,
      `/pay/not-a-uuid?expires=${expires}&signature=${signature}`
    ]) {
      const res = await app.get(path)
      expect(res.status).toBe(403)
      expect(res.headers.get("content-type")).toContain("text/html")
      expect(res.text).not.toContain("bank transfer")
    }

    await app.sql`update invoices set status = 'cancelled' where uuid = ${b}::uuid`
    const cancelled = await app.get(`/v1/invoices/${b}/payment-url`, { token: user.token })
    expect(cancelled.status).toBe(422)
    expect(cancelled.body).toEqual({ success: false, message: "Invoice is not payable." })
  })
})

describe("trial, renewal and payments [D35] [D80]", () => {
  test("concurrent first orders start one trial; the trial's own invoice is its renewal, none is added", async () => {
    const { cycleId, planId } = await plan({ name: "Trial", trial_days: 7 })
    const user = await app.createUser()
    // [D35] (rev. 2): a trial needs a verified e-mail
    await app.sql`update users set email_verified_at = now() where id = ${user.id}`
    const me = await typedClient(app, { token: user.token })
    // each answers the declared 201 (the typed client decodes no other status as a success)
    const orders = await Promise.all(Array.from({ length: 5 }, () => ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))))
    expect(orders).toHaveLength(5)
    const services = await app.sql<{ id: number; expires_at: Date }>`select id, expires_at from services where user_id = ${user.id}`
    expect(services).toHaveLength(1)
    const trialInvoices = await app.sql<{ n: number }>`
      select count(*)::int as n from invoices where user_id = ${user.id} and service_id = ${services[0]!.id}`
    expect(trialInvoices[0]!.n).toBe(1)

    // 2 days before the trial ends the jobs find the trial's invoice waiting: no second bill
    app.clock.advance(5 * DAY)
    const report = await app.run(runJobsOnce)
    expect(report.renewalsCreated).toBe(0)
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from invoices where service_id = ${services[0]!.id}`
    expect(count!.n).toBe(1)
  })

  test("paying a suspended service's invoice extends it but does not lift the suspension", async () => {
    const { cycleId, planId } = await plan({ name: "Suspended" })
    const user = await app.createUser()
    const granted = await ok(staff.servicesAdmin.grantService({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId } }))
    await ok(staff.servicesAdmin.updateService({ path: { service: granted.id }, payload: { status: "suspended" } }))
    const before = new Date(granted.expires_at).getTime()
    const [invoice] = await app.sql<{ uuid: string }>`
      insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, due_date)
      values (${user.id}, ${granted.id}, ${planId}, ${cycleId}, '19.99', 'EUR', ${new Date(app.clock.get().getTime() + 7 * DAY)})
      returning uuid::text as uuid`
    expect((await signed({ invoice_uuid: invoice!.uuid, status: "paid", transaction_id: `susp-${user.id}` })).status).toBe(200)
    const me = await typedClient(app, { token: user.token })
    const service = await ok(me.services.getService({ path: { service: granted.id } }))
    expect(service.status).toBe("suspended")
    expect(new Date(service.expires_at).getTime() - before).toBe(30 * DAY)
  })

  test("two invoices of one user paid at once: one service, extended by both", async () => {
    const { cycleId, planId } = await plan({ name: "Twice" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const uuids = await Promise.all([1, 2].map(async () => (await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))).uuid))
    const results = await Promise.all(uuids.map((uuid, i) => signed({ invoice_uuid: uuid, status: "paid", transaction_id: `two-${user.id}-${i}` })))
    expect(results.map((r) => r.status)).toEqual([200, 200])
    const services = await app.sql<{ expires_at: Date }>`select expires_at from services where user_id = ${user.id}`
    expect(services).toHaveLength(1)
    expect(services[0]!.expires_at.getTime() - app.clock.get().getTime()).toBe(60 * DAY)
  })

  test("a paid invoice of a deleted user keeps its row and is paid without a service", async () => {
    const { cycleId, planId } = await plan({ name: "Gone" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const uuid = (await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))).uuid
    await app.sql`delete from users where id = ${user.id}`
    const paid = await signed({ invoice_uuid: uuid, status: "paid", transaction_id: `gone-${user.id}` })
    expect(paid.status).toBe(200)
    expect(paid.body.data.status).toBe("paid")
    const [row] = await app.sql<{ user_id: number | null; service_id: number | null }>`select user_id, service_id from invoices where uuid = ${uuid}::uuid`
    expect(row).toEqual({ user_id: null, service_id: null })
  })
})

describe("admin invoices and promo uses [D33] [D70]", () => {
  test("an invoice created cancelled holds no promo use; one created pending does", async () => {
    const { cycleId, planId } = await plan({ name: "Promo" })
    await ok(staff.catalogAdmin.createPromo({ payload: { code: "ADMIN10", type: "fixed", value: 1000, max_uses: 5 } }))
    const user = await app.createUser()
    const cancelled = await ok(
      staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId, status: "cancelled", promo_code: "ADMIN10" } })
    )
    expect(cancelled).toMatchObject({ status: "cancelled", amount: "9.99", discount: "10.00", promo_code: "ADMIN10" })
    expect(await usesOf("ADMIN10")).toBe(0)
    const pending = await ok(
      staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId, promo_code: "admin10" } })
    )
    expect(pending).toMatchObject({ status: "pending", amount: "9.99" })
    expect(await usesOf("ADMIN10")).toBe(1)
    const paid = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId, status: "paid" } }))
    expect(paid.status).toBe("paid")
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.services.currentService())).plan.id).toBe(planId)
  })
})
