import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option, Redacted } from "effect"
import Stripe from "stripe"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { startStripeStandIn, stripeEvent, type StripeStandIn } from "../support/stripe-stand-in.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"

// [D123] for the `stripe` gateway (issue 34). Stripe's HTTP API is the edge a test cannot reach:
// `stripe-stand-in.ts` is a LOCAL STAND-IN for it, the real `stripe` package talks to it. Covered:
// an invoice cancelled by any path has its open Checkout Session expired, and a payment that gets
// through on a cancelled invoice answers 200 and goes to the balance (money is never lost); the
// same payment twice changes nothing; a second payment of a paid invoice, an underpayment, an
// overpayment's excess, another currency go to the balance; a signed event without `data` is
// answered 200 and ignored; the signed webhook is exempt from the general per-address limit.
const SECRET_KEY = "sk_test_rules_key"
const WEBHOOK_SECRET = "whsec_stripe_rules"
const stripe = new Stripe(SECRET_KEY)
const DAY = 86_400_000

let standIn: StripeStandIn
let app: TestApp
let staff: TypedClient

const stripeConfig = (url: string) => ({
  appUrl: "https://app.example.com",
  stripe: Option.some({ secretKey: Redacted.make(SECRET_KEY), webhookSecret: Redacted.make(WEBHOOK_SECRET), apiUrl: Option.some(url) })
})

beforeAll(async () => {
  standIn = startStripeStandIn({ secretKey: SECRET_KEY })
  app = await makeTestApp({ config: stripeConfig(standIn.url) })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0), ('Pro', '', 500, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'USD'), (2, 'Monthly', 30, '30.00', 'USD'), (2, 'Yearly', 365, '300.00', 'USD')`
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(async () => {
  await app.dispose()
  standIn.stop()
})

const sign = (raw: string) =>
  stripe.webhooks.generateTestHeaderStringAsync({ payload: raw, secret: WEBHOOK_SECRET, timestamp: Math.floor(app.clock.get().getTime() / 1000) })

const deliver = async (event: unknown) => {
  const raw = JSON.stringify(event)
  return app.post("/v1/webhooks/payments/stripe", { raw, headers: { "stripe-signature": await sign(raw), "content-type": "application/json" } })
}

const statusOf = async (uuid: string) => (await app.sql<{ status: string }>`select status from invoices where uuid = ${uuid}::uuid`)[0]!.status
const balanceOf = async (token: string) => {
  const me = await typedClient(app, { token })
  return ok(me.balance.getBalance())
}
const expireCalls = (sessionId: string) => standIn.requests.filter((r) => r.method === "POST" && r.path === `/v1/checkout/sessions/${sessionId}/expire`).length

/** an invoice's open Checkout Session, made through its payment URL */
const sessionOf = async (token: string, uuid: string) => {
  const me = await typedClient(app, { token })
  const link = await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
  const id = link.url.split("/").at(-1)!
  expect(standIn.sessions.get(id)!.status).toBe("open")
  return id
}

const stripeOrder = async (cycleId = 1) => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const { uuid } = await ok(me.billing.placeOrder({ payload: { plan_id: cycleId === 1 ? 1 : 2, cycle_id: cycleId, gateway: "stripe" } }))
  return { user, me, uuid, sessionId: await sessionOf(user.token, uuid) }
}

/** a user with an active Basic service paid by an admin's hand */
const subscriber = async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const order = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: order.uuid } }))).status).toBe("paid")
  const current = await ok(me.services.currentService())
  return { user, me, serviceId: current.id }
}

/** a plan change that answers its invoice: the declared 201 (a 200 decodes as the service) */
const invoiceOf = <A extends object>(answer: A): Extract<A, { readonly uuid: string }> => {
  if (!("uuid" in answer)) throw new Error("the change answered the service, not its invoice (201)")
  return answer as Extract<A, { readonly uuid: string }>
}

describe("a cancelled invoice's Checkout Session is expired at Stripe [D123] (issue 34)", () => {
  test("the user cancels the invoice: the session is expired; a payment that got through anyway is 200 and goes to the balance, once", async () => {
    const { me, sessionId, user, uuid } = await stripeOrder()
    expect((await ok(me.billing.cancelInvoice({ path: { invoice: uuid } }))).status).toBe("cancelled")
    expect(standIn.sessions.get(sessionId)!.status).toBe("expired")
    expect(expireCalls(sessionId)).toBe(1)

    // the payer was quicker than the expiry: Stripe completed the session all the same
    const session = standIn.pay(sessionId)
    const event = stripeEvent("checkout.session.completed", session)
    const res = await deliver(event)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ event_id: event.id, handled: true, invoice: { uuid, status: "cancelled" } })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "10.00" }])
    const ledger = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
    expect(ledger.data[0]).toMatchObject({ amount: "10.00", currency: "USD", reason: "Payment for a cancelled invoice", invoice_uuid: uuid })

    // the same event again, and another event of the same payment: nothing more
    expect((await deliver(event)).body.data).toMatchObject({ handled: false })
    expect((await deliver(stripeEvent("checkout.session.async_payment_succeeded", session))).status).toBe(200)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "10.00" }])
    expect(await statusOf(uuid)).toBe("cancelled")
    expect(await app.sql`select id from services where user_id = ${user.id}`).toHaveLength(0)
  }, 60_000)

  test("a second plan change cancels the first change invoice: its session is expired", async () => {
    const { me, serviceId, user } = await subscriber()
    const first = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: serviceId }, payload: { plan_id: 2, cycle_id: 2, gateway: "stripe" } })))
    const sessionId = await sessionOf(user.token, first.uuid)
    invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: serviceId }, payload: { plan_id: 2, cycle_id: 3, gateway: "stripe" } })))
    expect(await statusOf(first.uuid)).toBe("cancelled")
    expect(standIn.sessions.get(sessionId)!.status).toBe("expired")
    // the first change's payment arriving late goes to the balance; the service stays on Basic
    const late = await deliver(stripeEvent("checkout.session.completed", standIn.pay(sessionId)))
    expect(late.status).toBe(200)
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: first.amount }])
    expect((await ok(me.services.getService({ path: { service: serviceId } }))).plan.id).toBe(1)
  }, 60_000)

  test("a service cancel cancels its pending invoice: its session is expired", async () => {
    const { me, serviceId, user } = await subscriber()
    const change = invoiceOf(await ok(me.subscriptions.changePlan({ path: { service: serviceId }, payload: { plan_id: 2, cycle_id: 2, gateway: "stripe" } })))
    const sessionId = await sessionOf(user.token, change.uuid)
    await ok(me.subscriptions.cancelService({ path: { service: serviceId }, payload: { at: "period_end" } }))
    expect(await statusOf(change.uuid)).toBe("cancelled")
    expect(standIn.sessions.get(sessionId)!.status).toBe("expired")
  }, 60_000)

  test("an operator marks a Stripe invoice paid by hand: its open session is expired, so the payer is not charged twice", async () => {
    const { sessionId, uuid } = await stripeOrder()
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
    expect(standIn.sessions.get(sessionId)!.status).toBe("expired")
  }, 60_000)

  test("the overdue job cancels an invoice past due: its session is expired; Stripe down, the next run does it", async () => {
    const { sessionId, uuid } = await stripeOrder()
    app.clock.advance(8 * DAY)
    standIn.controls.failing = true
    try {
      await app.run(runJobsOnce)
    } finally {
      standIn.controls.failing = false
    }
    expect(await statusOf(uuid)).toBe("cancelled")
    expect(standIn.sessions.get(sessionId)!.status).toBe("open")
    await app.run(runJobsOnce)
    expect(standIn.sessions.get(sessionId)!.status).toBe("expired")
    const calls = expireCalls(sessionId)
    await app.run(runJobsOnce)
    // closed once: not asked again
    expect(expireCalls(sessionId)).toBe(calls)
  }, 60_000)
})

describe("money that differs from the invoice [D123] (issue 34)", () => {
  test("a second, different payment of a paid invoice: 200, the service extended once, the money on the balance", async () => {
    const { sessionId, user, uuid } = await stripeOrder()
    const session = standIn.pay(sessionId)
    expect((await deliver(stripeEvent("checkout.session.completed", session))).status).toBe(200)
    const [service] = await app.sql<{ expires_at: Date }>`select expires_at from services where user_id = ${user.id}`
    const other = await deliver(stripeEvent("checkout.session.completed", { ...session, id: "cs_test_other", payment_intent: "pi_test_other" }))
    expect(other.status).toBe(200)
    expect(other.body.data).toMatchObject({ handled: true, invoice: { uuid, status: "paid" } })
    expect(await app.sql`select expires_at from services where user_id = ${user.id}`).toEqual([service!])
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "10.00" }])
  }, 60_000)

  test("an overpayment pays the invoice and the excess goes to the balance", async () => {
    const { sessionId, user, uuid } = await stripeOrder()
    const res = await deliver(stripeEvent("checkout.session.completed", { ...standIn.pay(sessionId), amount_total: 1250 }))
    expect(res.status).toBe(200)
    expect(res.body.data.invoice).toMatchObject({ uuid, status: "paid" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "2.50" }])
    expect(await app.sql`select id from services where user_id = ${user.id} and status = 'active'`).toHaveLength(1)
  }, 60_000)

  test("an underpayment goes to the balance, the invoice stays pending; a wrong signature is 401 and changes nothing", async () => {
    const { sessionId, user, uuid } = await stripeOrder()
    const event = stripeEvent("checkout.session.completed", { ...standIn.pay(sessionId), amount_total: 400 })
    const raw = JSON.stringify(event)
    const forged = await app.post("/v1/webhooks/payments/stripe", { raw, headers: { "stripe-signature": "t=1,v1=00" } })
    expect(forged.status).toBe(401)
    expect(await balanceOf(user.token)).toEqual([])
    const res = await deliver(event)
    expect(res.status).toBe(200)
    expect(res.body.data.invoice).toMatchObject({ uuid, status: "pending" })
    expect(await balanceOf(user.token)).toEqual([{ currency: "USD", amount: "4.00" }])
  }, 60_000)
})

describe("a signed event that is not a whole event (issue 34)", () => {
  test("without `data` (or its object): 200, not handled, recorded once; without an id: 422; never a 500", async () => {
    const { id: _id, data: _data, ...rest } = stripeEvent("checkout.session.completed", {})
    for (const event of [
      { ...rest, id: "evt_no_data" },
      { ...rest, id: "evt_null_data", data: null },
      { ...rest, id: "evt_no_object", data: {} }
    ]) {
      const res = await deliver(event)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true, data: { event_id: event.id, type: "checkout.session.completed", handled: false, invoice: null } })
    }
    const noId = await deliver({ ...rest, data: { object: {} } })
    expect(noId.status).toBe(422)
    expect(Object.keys(noId.body.errors)).toEqual(["body"])
    const notObject = await deliver(["not", "an", "event"])
    expect(notObject.status).toBe(422)
  }, 60_000)
})

describe("the signed payment webhooks are not under the general limit (issue 34)", () => {
  test("GENERAL_RATE_LIMIT=5: 12 Stripe and 12 manual deliveries from one address are answered (200, 401), none 429; another route is 429 after 5", async () => {
    const limited = await makeTestApp({ reset: false, config: { ...stripeConfig(standIn.url), generalRateLimit: 5 } })
    try {
      const statuses: Array<number> = []
      for (let i = 0; i < 12; i++) {
        const raw = JSON.stringify(stripeEvent("customer.created", { id: `cus_${i}`, object: "customer" }))
        statuses.push((await limited.post("/v1/webhooks/payments/stripe", { raw, headers: { "stripe-signature": await sign(raw) } })).status)
      }
      expect(statuses).toEqual(Array(12).fill(200))
      const manual: Array<number> = []
      for (let i = 0; i < 12; i++) {
        manual.push((await limited.post("/v1/webhooks/payments/manual", { body: { invoice_uuid: crypto.randomUUID() } })).status)
      }
      // unsigned: refused by the signature, never by the limit
      expect(manual).toEqual(Array(12).fill(401))
      const others: Array<number> = []
      for (let i = 0; i < 7; i++) others.push((await limited.get("/v1/payment-gateways")).status)
      expect(others.slice(0, 5)).toEqual(Array(5).fill(200))
      expect(others.at(-1)).toBe(429)
    } finally {
      await limited.dispose()
    }
  }, 60_000)
})
