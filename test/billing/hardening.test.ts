import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { freshEmail, PASSWORD, register, verifyTokenOf, waitForMail } from "../accounts/helpers.ts"
import { catalogAdmin, freshAddress } from "../catalog/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// Issue 14 in the money rooms: promos per caller and invoice cancellation ([D33] rev. 2), the
// webhook's amount, currency and gateway ([D40] rev. 2), a trial once per e-mail address ever
// ([D35] rev. 2).
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
let boss: TypedClient
let basic: { id: number }
let monthly: { id: number }
let trialPlan: { id: number }
let trialCycle: { id: number }
let otherTrialPlan: { id: number }
let otherTrialCycle: { id: number }
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  boss = await typedClient(app, { token: admin.token })
  basic = await admin.createPlan({ name: "Basic" })
  monthly = await admin.createCycle(basic.id, { price: "10.00", currency: "USD" })
  trialPlan = await admin.createPlan({ name: "Trial", trial_days: 7 })
  trialCycle = await admin.createCycle(trialPlan.id, { price: "5.00" })
  otherTrialPlan = await admin.createPlan({ name: "Other trial", trial_days: 3 })
  otherTrialCycle = await admin.createCycle(otherTrialPlan.id, { price: "7.00" })
})
afterAll(() => app.dispose())

/** an order on the wire, for its 422 envelopes */
const order = (token: string, body: Record<string, unknown>) => app.post("/v1/orders", { token, body })
/** an order through the typed client: `ok` answers only the declared 201 (anything else fails the test) */
const placed = async (token: string, payload: { plan_id: number; cycle_id: number; promo_code?: string }) => {
  const me = await typedClient(app, { token })
  return ok(me.billing.placeOrder({ payload }))
}
/** a promo the caller may use: `ok` answers only the declared 200 (a client address of its own, [D30]) */
const validOk = async (code: string, token?: string) => {
  const caller = await typedClient(app, { ...(token === undefined ? {} : { token }), headers: freshAddress() })
  return ok(caller.catalog.validatePromo({ payload: { code, plan_id: basic.id, cycle_id: monthly.id } }))
}
const validate = (code: string, token?: string) =>
  app.post("/v1/promos/validate", {
    body: { code, plan_id: basic.id, cycle_id: monthly.id },
    headers: freshAddress(),
    ...(token === undefined ? {} : { token })
  })
const usesOf = async (code: string) => (await app.sql<{ uses: number }>`select uses from promo_codes where lower(code) = lower(${code})`)[0]!.uses
const servicesOf = (userId: number) => app.sql<{ id: number; plan_id: number }>`select id, plan_id from services where user_id = ${userId}`
const verify = (userId: number) => app.sql`update users set email_verified_at = now() where id = ${userId}`

describe("promos per caller [D33] (rev. 2)", () => {
  test("admin promos take max_uses_per_user (default 1) and show it", async () => {
    const byDefault = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "DEFAULT1", type: "fixed", value: 1 } })
    expect(byDefault.status).toBe(201)
    expect(byDefault.body.data.max_uses_per_user).toBe(1)
    const two = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "TWICE", type: "fixed", value: 1, max_uses_per_user: 2 } })
    expect(two.status).toBe(201)
    expect(two.body.data.max_uses_per_user).toBe(2)
    const bad = await app.post("/v1/admin/promos", { token: admin.token, body: { code: "ZERO", type: "fixed", value: 1, max_uses_per_user: 0 } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.max_uses_per_user).toEqual(["The max uses per user field must be at least 1."])
  })

  test("a code the caller has on a pending or paid invoice is used up for them, not for others", async () => {
    await admin.createPromo({ code: "ONCEEACH", type: "percentage", value: 10 })
    const user = await app.createUser()
    const other = await app.createUser()
    await validOk("onceeach", user.token)
    const first = await placed(user.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "OnceEach" })
    expect(first.amount).toBe("9.00")

    const again = await order(user.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "ONCEEACH" })
    expect(again.status).toBe(422)
    expect(again.body).toEqual({ success: false, message: "Invalid or expired promo code." })
    const validated = await validate("ONCEEACH", user.token)
    expect(validated.status).toBe(422)
    expect(validated.body).toEqual({ success: false, message: "Invalid or expired promo code." })

    // anonymous callers and other users are not limited by this user's invoice
    await validOk("ONCEEACH")
    await validOk("ONCEEACH", other.token)
    await placed(other.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "ONCEEACH" })

    // paid still counts
    await ok(boss.billingAdmin.markPaid({ path: { invoice: first.uuid } }))
    expect((await order(user.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "ONCEEACH" })).status).toBe(422)
    expect(await usesOf("ONCEEACH")).toBe(2)
  })

  test("max_uses_per_user 2: two orders, the third is refused", async () => {
    await admin.createPromo({ code: "TWOEACH", type: "fixed", value: 1, max_uses_per_user: 2 })
    const user = await app.createUser()
    const body = { plan_id: basic.id, cycle_id: monthly.id, promo_code: "TWOEACH" }
    const me = await typedClient(app, { token: user.token })
    await ok(me.billing.placeOrder({ payload: body }))
    await ok(me.billing.placeOrder({ payload: body }))
    expect((await order(user.token, body)).status).toBe(422)
    expect(await usesOf("TWOEACH")).toBe(2)
  })
})

describe("POST /v1/invoices/{invoice}/cancel [D33] (rev. 2)", () => {
  test("cancels the caller's pending invoice, gives its promo use back; the code works for them again", async () => {
    await admin.createPromo({ code: "CANCELME", type: "fixed", value: 2, max_uses: 1 })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const made = await ok(me.billing.placeOrder({ payload: { plan_id: basic.id, cycle_id: monthly.id, promo_code: "CANCELME" } }))
    expect(await usesOf("CANCELME")).toBe(1)

    // the typed client decodes only the declared 200 `{success: true, data}`
    const res = await ok(me.billing.cancelInvoice({ path: { invoice: made.uuid } }))
    expect(res).toEqual({ ...made, status: "cancelled" })
    expect(await usesOf("CANCELME")).toBe(0)
    expect((await ok(me.billing.getInvoice({ path: { invoice: made.uuid } }))).status).toBe("cancelled")

    // cancelled: not payable, nothing given back twice
    const twice = await app.post(`/v1/invoices/${made.uuid}/cancel`, { token: user.token })
    expect(twice.status).toBe(422)
    expect(twice.body).toEqual({ success: false, message: "Invoice is not payable." })
    expect(await usesOf("CANCELME")).toBe(0)
    await ok(me.billing.placeOrder({ payload: { plan_id: basic.id, cycle_id: monthly.id, promo_code: "cancelme" } }))
  })

  test("a paid invoice is not payable; another user's or an unknown one is 404; no token is 401", async () => {
    const user = await app.createUser()
    const other = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const uuid = (await ok(me.billing.placeOrder({ payload: { plan_id: basic.id, cycle_id: monthly.id } }))).uuid
    expect((await app.post(`/v1/invoices/${uuid}/cancel`, { token: other.token })).status).toBe(404)
    expect((await app.post(`/v1/invoices/00000000-0000-4000-8000-000000000000/cancel`, { token: user.token })).status).toBe(404)
    expect((await app.post(`/v1/invoices/not-a-uuid/cancel`, { token: user.token })).status).toBe(404)
    expect((await app.post(`/v1/invoices/${uuid}/cancel`)).status).toBe(401)
    await ok(boss.billingAdmin.markPaid({ path: { invoice: uuid } }))
    const paid = await app.post(`/v1/invoices/${uuid}/cancel`, { token: user.token })
    expect(paid.status).toBe(422)
    expect(paid.body).toEqual({ success: false, message: "Invoice is not payable." })
    expect((await ok(me.billing.getInvoice({ path: { invoice: uuid } }))).status).toBe("paid")
  })

  test("concurrent cancels: one succeeds, the use is given back once", async () => {
    await admin.createPromo({ code: "RACE", type: "fixed", value: 1, max_uses: 5 })
    await admin.createPromo({ code: "RACEKEEP", type: "fixed", value: 1 })
    const user = await app.createUser()
    const keeper = await app.createUser()
    // another caller's use stays counted whatever the race does
    await placed(keeper.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "RACE" })
    const made = await placed(user.token, { plan_id: basic.id, cycle_id: monthly.id, promo_code: "RACE" })
    expect(await usesOf("RACE")).toBe(2)
    // statuses of a race: on the wire
    const results = await Promise.all(Array.from({ length: 6 }, () => app.post(`/v1/invoices/${made.uuid}/cancel`, { token: user.token })))
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    expect(results.filter((r) => r.status === 422)).toHaveLength(5)
    expect(await usesOf("RACE")).toBe(1)
  })
})

describe("the webhook checks amount, currency and gateway [D40] (rev. 2)", () => {
  const SECRET = "whsec_test"
  const send = (body: unknown, gateway = "manual") => {
    const raw = JSON.stringify(body)
    const t = Math.floor(app.clock.get().getTime() / 1000)
    const signature = `t=${t},v1=${createHmac("sha256", SECRET).update(`${t}.${raw}`).digest("hex")}`
    return app.post(`/v1/webhooks/payments/${gateway}`, { raw, headers: { "x-signature": signature } })
  }
  const pending = async () => {
    const user = await app.createUser()
    const made = await placed(user.token, { plan_id: basic.id, cycle_id: monthly.id })
    return { user, uuid: made.uuid as string }
  }
  const statusOf = async (uuid: string) => (await app.sql<{ status: string }>`select status from invoices where uuid = ${uuid}::uuid`)[0]!.status

  // [D123] (rev. 4): money that differs from the invoice is no longer a 422: it goes to the balance
  test("an amount below the invoice's or another currency: 200, credited to the balance, the invoice still pending; then the right payment pays it", async () => {
    const { user, uuid } = await pending()
    const short = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-amount-${uuid}`, amount: "9.99", currency: "USD" })
    expect(short.status).toBe(200)
    expect(short.body.data).toMatchObject({ uuid, status: "pending" })
    const euros = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-currency-${uuid}`, amount: "10.00", currency: "EUR" })
    expect(euros.status).toBe(200)
    expect(euros.body.data).toMatchObject({ uuid, status: "pending" })
    expect(await statusOf(uuid)).toBe("pending")
    expect(await servicesOf(user.id)).toHaveLength(0)
    const me = await typedClient(app, { token: user.token })
    const balance = await ok(me.balance.getBalance())
    expect(balance).toEqual([
      { currency: "EUR", amount: "10.00" },
      { currency: "USD", amount: "9.99" }
    ])

    const right = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-right-${uuid}`, amount: "10.00", currency: "USD" })
    expect(right.status).toBe(200)
    expect(right.body.data.status).toBe("paid")
  })

  test("an amount or currency that is not one: 422 errors.amount / errors.currency, nothing changed", async () => {
    const { user, uuid } = await pending()
    for (const [body, field] of [
      [{ amount: "ten" }, "amount"],
      [{ amount: "-1.00" }, "amount"],
      [{ amount: "0.00" }, "amount"],
      [{ amount: "1.001" }, "amount"],
      [{ currency: "U$" }, "currency"],
      [{ currency: "12" }, "currency"]
    ] as const) {
      const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-bad-${field}-${JSON.stringify(body)}`, ...body })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual([field])
    }
    expect(await statusOf(uuid)).toBe("pending")
    expect(await servicesOf(user.id)).toHaveLength(0)
    expect(await app.sql`select 1 from payment_events where invoice_id = (select id from invoices where uuid = ${uuid}::uuid)`).toHaveLength(0)
  })

  test('without amount and currency the event is paid as before; "10" equals 10.00', async () => {
    const plain = await pending()
    expect((await send({ invoice_uuid: plain.uuid, status: "paid", transaction_id: `tx-plain-${plain.uuid}` })).status).toBe(200)
    const short = await pending()
    expect((await send({ invoice_uuid: short.uuid, status: "paid", transaction_id: `tx-short-${short.uuid}`, amount: "10" })).status).toBe(200)
  })

  test("an invoice of another gateway: 404 on this gateway's webhook, nothing changed", async () => {
    const { uuid } = await pending()
    await app.sql`update invoices set gateway = 'stripe' where uuid = ${uuid}::uuid`
    const res = await send({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-gateway-${uuid}` })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
    expect(await statusOf(uuid)).toBe("pending")
  })
})

describe("a trial once per e-mail address, verified only [D35] (rev. 2)", () => {
  test("unverified: an ordinary pending invoice, no service", async () => {
    const user = await app.createUser()
    const before = app.clock.get().getTime()
    const res = await placed(user.token, { plan_id: trialPlan.id, cycle_id: trialCycle.id })
    expect(res.status).toBe("pending")
    expect(res.due_date.getTime()).toBe(before + 7 * DAY)
    expect(await servicesOf(user.id)).toHaveLength(0)
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
  })

  test("verified: a trial; a second trial on another plan is ordinary", async () => {
    const user = await app.createUser()
    await verify(user.id)
    const me = await typedClient(app, { token: user.token })
    await ok(me.billing.placeOrder({ payload: { plan_id: trialPlan.id, cycle_id: trialCycle.id } }))
    const [service] = await servicesOf(user.id)
    expect(service!.plan_id).toBe(trialPlan.id)
    expect((await ok(me.services.currentService())).plan.id).toBe(trialPlan.id)

    const second = await ok(me.billing.placeOrder({ payload: { plan_id: otherTrialPlan.id, cycle_id: otherTrialCycle.id } }))
    expect(await servicesOf(user.id)).toHaveLength(1)
    expect(second.due_date.getTime()).toBe(app.clock.get().getTime() + 7 * DAY)
  })

  test("a deleted account's trial is remembered: the same address, registered and verified again, gets none", async () => {
    const email = freshEmail("trial")
    const first = await register(app, { email })
    await verify(first.id)
    const firstClient = await typedClient(app, { token: first.token })
    await ok(firstClient.billing.placeOrder({ payload: { plan_id: trialPlan.id, cycle_id: trialCycle.id } }))
    expect(await servicesOf(first.id)).toHaveLength(1)
    expect(typeof (await ok(firstClient.accounts.deleteAccount({ payload: { password: PASSWORD } })))).toBe("string")

    const sent = [...app.outbox].length
    const again = await register(app, { email: email.toUpperCase() })
    // the new account's verification mail (sent after the first one)
    const mail = await waitForMail(app, (m) => [...app.outbox].indexOf(m) >= sent && m.to.toLowerCase() === email && /verify-email/.test(m.text))
    const anonymous = await typedClient(app)
    expect(typeof (await ok(anonymous.accounts.verifyEmail({ payload: { token: verifyTokenOf(mail) } })))).toBe("string")
    const verified = await app.sql<{ email_verified_at: Date | null }>`select email_verified_at from users where id = ${again.id}`
    expect(verified[0]!.email_verified_at).not.toBeNull()
    await placed(again.token, { plan_id: otherTrialPlan.id, cycle_id: otherTrialCycle.id })
    expect(await servicesOf(again.id)).toHaveLength(0)
  })
})
