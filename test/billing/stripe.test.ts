import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Either, Layer, Option, Redacted } from "effect"
import Stripe from "stripe"
import { GatewaysLive, PaymentGateways } from "../../src/billing/Gateways.ts"
import { Invoices } from "../../src/billing/Invoices.ts"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { DomainEventsLive } from "../../src/webhooks/Webhooks.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { startStripeStandIn, stripeEvent, type StripeStandIn } from "../support/stripe-stand-in.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D112] Stripe through the official `stripe` package. Stripe's own HTTP API is the one edge a
// test cannot reach: `stripe-stand-in.ts` is a LOCAL STAND-IN for it (a fake at the edge), and the
// real package talks to it through STRIPE_API_URL. Webhook payloads are signed with the package's
// own test helper.
const SECRET_KEY = "sk_test_stand_in_key"
const WEBHOOK_SECRET = "whsec_stripe_stand_in"
const APP_URL = "https://app.example.com"
const stripe = new Stripe(SECRET_KEY)

let standIn: StripeStandIn
let app: TestApp

const stripeConfig = (url: string) => ({
  appUrl: APP_URL,
  stripe: Option.some({ secretKey: Redacted.make(SECRET_KEY), webhookSecret: Redacted.make(WEBHOOK_SECRET), apiUrl: Option.some(url) })
})

beforeAll(async () => {
  standIn = startStripeStandIn({ secretKey: SECRET_KEY })
  app = await makeTestApp({ config: stripeConfig(standIn.url) })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'USD'), (1, 'Yearly', 365, '1500.00', 'JPY')`
})
afterAll(async () => {
  await app.dispose()
  standIn.stop()
})

const order = async (payload: { readonly cycle_id?: number; readonly gateway?: string | null } = { gateway: "stripe" }) => {
  const user = await app.createUser({ name: "Stripe Payer" })
  const me = await typedClient(app, { token: user.token })
  const invoice = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, ...payload } }))
  return { user, me, uuid: invoice.uuid, invoice }
}

/** an admin through the typed client */
const staffClient = async () => typedClient(app, { token: (await app.createUser({ role: "admin" })).token })

const checkoutCreates = () => standIn.requests.filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions")

/** signed as Stripe signs, `t` on the app clock unless given */
const sign = (raw: string, timestamp = Math.floor(app.clock.get().getTime() / 1000), secret = WEBHOOK_SECRET) =>
  stripe.webhooks.generateTestHeaderStringAsync({ payload: raw, secret, timestamp })

const deliver = async (event: unknown, signature?: string) => {
  const raw = JSON.stringify(event)
  return app.post("/v1/webhooks/payments/stripe", {
    raw,
    headers: { "stripe-signature": signature ?? (await sign(raw)), "content-type": "application/json" }
  })
}

const statusOf = async (uuid: string) => (await app.sql<{ status: string }>`select status from invoices where uuid = ${uuid}::uuid`)[0]!.status
const servicesOf = (userId: number) => app.sql<{ id: number; status: string }>`select id, status from services where user_id = ${userId}`

/** an order paid at the stand-in: the session it made, completed */
const paidSession = async () => {
  const placed = await order()
  await ok(placed.me.billing.paymentUrl({ path: { invoice: placed.uuid } }))
  const session = [...standIn.sessions.values()].find((s) => s.client_reference_id === placed.uuid)!
  return { ...placed, session: standIn.pay(session.id) }
}

describe("GET /v1/payment-gateways [D112]", () => {
  test("no token; the enabled gateways as {name, display_name}: manual always, stripe when its keys are set", async () => {
    const res = await app.get("/v1/payment-gateways")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: [
        { name: "manual", display_name: "Bank transfer" },
        { name: "stripe", display_name: "Card (Stripe)" }
      ]
    })

    const plain = await makeTestApp({ reset: false })
    try {
      const anyone = await typedClient(plain)
      expect(await ok(anyone.billingGateways.listPaymentGateways())).toEqual([{ name: "manual", display_name: "Bank transfer" }])
      // Stripe disabled: naming it is the 422 of an unknown gateway; its webhook verifies nothing
      const user = await plain.createUser()
      const res = await plain.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1, gateway: "stripe" } })
      expect(res.status).toBe(422)
      expect(res.body.errors).toEqual({ gateway: ["The selected gateway is invalid."] })
      const raw = JSON.stringify(stripeEvent("checkout.session.completed", {}))
      expect((await plain.post("/v1/webhooks/payments/stripe", { raw, headers: { "stripe-signature": await sign(raw) } })).status).toBe(401)
    } finally {
      await plain.dispose()
    }
  })
})

describe("through the typed client [D112]", () => {
  test("list the gateways, order with stripe, get its Checkout URL", async () => {
    const anonymous = await app.client()
    const gateways = await Effect.runPromise(anonymous.billingGateways.listPaymentGateways())
    expect(gateways.map((g) => g.name)).toEqual(["manual", "stripe"])
    const user = await app.createUser()
    const client = await app.client(user.token)
    const invoice = await Effect.runPromise(client.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, gateway: "stripe" } }))
    expect(invoice.gateway).toBe("stripe")
    const link = await Effect.runPromise(client.billing.paymentUrl({ path: { invoice: invoice.uuid } }))
    expect(link.url.startsWith(`${standIn.url}/c/pay/`)).toBe(true)
  })
})

describe("POST /v1/orders picks a gateway [D112]", () => {
  test("gateway stripe; none: manual; unknown: 422 errors.gateway and no invoice", async () => {
    expect((await order()).invoice.gateway).toBe("stripe")
    expect((await order({})).invoice.gateway).toBe("manual")
    expect((await order({ gateway: null })).invoice.gateway).toBe("manual")
    const user = await app.createUser()
    for (const gateway of ["paypal", "STRIPE ", "", 7]) {
      const res = await app.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1, gateway } })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["gateway"])
    }
    expect(await app.sql`select id from invoices where user_id = ${user.id}`).toHaveLength(0)
  })

  test("DEFAULT_GATEWAY=stripe makes stripe the default", async () => {
    const other = await makeTestApp({ reset: false, config: { ...stripeConfig(standIn.url), defaultGateway: "stripe" } })
    try {
      const user = await other.createUser()
      const me = await typedClient(other, { token: user.token })
      expect((await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))).gateway).toBe("stripe")
    } finally {
      await other.dispose()
    }
  })
})

describe("a Stripe invoice's payment URL is a Checkout Session [D112]", () => {
  test("mode payment, one line item of the amount in minor units, the uuid as client_reference_id and metadata, urls under APP_URL", async () => {
    const { user, uuid } = await order()
    const before = checkoutCreates().length
    const res = await app.get(`/v1/invoices/${uuid}/payment-url`, { token: user.token })
    expect(res.status).toBe(200)
    const created = checkoutCreates()
    expect(created).toHaveLength(before + 1)
    const sent = created.at(-1)!
    expect(sent.headers["authorization"]).toBe(`Bearer ${SECRET_KEY}`)
    expect(sent.body).toMatchObject({
      mode: "payment",
      client_reference_id: uuid,
      metadata: { invoice_uuid: uuid },
      line_items: { "0": { quantity: "1", price_data: { currency: "usd", unit_amount: "1000" } } }
    })
    expect(Object.keys(sent.body["line_items"] as object)).toEqual(["0"])
    expect(String(sent.body["success_url"]).startsWith(`${APP_URL}/`)).toBe(true)
    expect(String(sent.body["cancel_url"]).startsWith(`${APP_URL}/`)).toBe(true)
    const session = standIn.sessions.get([...standIn.sessions.keys()].at(-1)!)!
    expect(res.body.data).toEqual({ url: session.url, gateway: "stripe", expires_at: new Date(session.expires_at * 1000).toISOString() })
    expect(res.headers.get("cache-control")).toBe("no-store")
  })

  test("a currency without minor units is charged in whole units (JPY 1500.00 -> 1500)", async () => {
    const { me, uuid } = await order({ cycle_id: 2, gateway: "stripe" })
    await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    expect(checkoutCreates().at(-1)!.body).toMatchObject({ line_items: { "0": { price_data: { currency: "jpy", unit_amount: "1500" } } } })
  })

  test("a second call while the session is open answers the same session; once it expired, a new one", async () => {
    const { me, uuid } = await order()
    const first = await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    const creates = checkoutCreates().length
    expect(await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))).toEqual(first)
    expect(checkoutCreates()).toHaveLength(creates)

    const sessionId = first.url.split("/").at(-1)!
    standIn.expire(sessionId)
    const third = await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    expect(third.url).not.toBe(first.url)
    expect(checkoutCreates()).toHaveLength(creates + 1)
  })

  test("paid at Stripe, its webhook not yet here: no second session (422 Invoice is not payable.), the invoice still pending", async () => {
    const { me, user, uuid } = await order()
    const first = await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    standIn.pay(first.url.split("/").at(-1)!)
    const creates = checkoutCreates().length
    const again = await app.get(`/v1/invoices/${uuid}/payment-url`, { token: user.token })
    expect(again.status).toBe(422)
    expect(again.body).toEqual({ success: false, message: "Invoice is not payable." })
    expect(checkoutCreates()).toHaveLength(creates)
    expect(await statusOf(uuid)).toBe("pending")
  })

  test("six calls at once make one session, and all six answer it", async () => {
    const { me, uuid } = await order()
    // each answers the declared 200 (the typed client decodes no other status as a success)
    const results = await Promise.all(Array.from({ length: 6 }, () => ok(me.billing.paymentUrl({ path: { invoice: uuid } }))))
    expect(results).toHaveLength(6)
    expect(new Set(results.map((r) => r.url)).size).toBe(1)
    expect([...standIn.sessions.values()].filter((s) => s.client_reference_id === uuid)).toHaveLength(1)
  })

  test("Stripe unreachable: 503 in the envelope, nothing stored", async () => {
    const { user, uuid } = await order()
    standIn.controls.failing = true
    try {
      const res = await app.get(`/v1/invoices/${uuid}/payment-url`, { token: user.token })
      expect(res.status).toBe(503)
      expect(res.body).toEqual({ success: false, message: "The payment gateway is unavailable." })
    } finally {
      standIn.controls.failing = false
    }
    expect(await app.sql`select 1 from stripe_checkout_sessions s join invoices i on i.id = s.invoice_id where i.uuid = ${uuid}::uuid`).toHaveLength(0)
  })

  test("another user's invoice is 404; a paid one 422 Invoice is not payable.", async () => {
    const { uuid } = await order()
    const stranger = await app.createUser()
    expect((await app.get(`/v1/invoices/${uuid}/payment-url`, { token: stranger.token })).status).toBe(404)
    const paid = await paidSession()
    expect((await deliver(stripeEvent("checkout.session.completed", paid.session))).status).toBe(200)
    const res = await app.get(`/v1/invoices/${paid.uuid}/payment-url`, { token: paid.user.token })
    expect(res.status).toBe(422)
    expect(res.body.message).toBe("Invoice is not payable.")
  })
})

describe("POST /v1/webhooks/payments/stripe [D112]", () => {
  test("checkout.session.completed, paid: the invoice is paid and its service starts, as [D40]", async () => {
    const { user, uuid, session } = await paidSession()
    const res = await deliver(stripeEvent("checkout.session.completed", session))
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ type: "checkout.session.completed", handled: true, invoice: { uuid, status: "paid", gateway: "stripe" } })
    expect(await servicesOf(user.id)).toEqual([{ id: expect.any(Number), status: "active" }])
    const [row] = await app.sql<{ transaction_id: string }>`select transaction_id from invoices where uuid = ${uuid}::uuid`
    expect(row!.transaction_id).toBe(session.payment_intent!)
  })

  test("a bad signature, another secret, or one older than 300 s: 401 Invalid signature., nothing changed", async () => {
    const { user, uuid, session } = await paidSession()
    const event = stripeEvent("checkout.session.completed", session)
    const raw = JSON.stringify(event)
    const now = Math.floor(app.clock.get().getTime() / 1000)
    for (const signature of ["garbage", await sign(raw, now, "whsec_other"), await sign(`${raw} `, now), await sign(raw, now - 301)]) {
      const res = await deliver(event, signature)
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Invalid signature." })
    }
    expect((await app.post("/v1/webhooks/payments/stripe", { raw })).status).toBe(401)
    expect(await statusOf(uuid)).toBe("pending")
    expect(await servicesOf(user.id)).toHaveLength(0)
    // 299 s old is inside the window
    expect((await deliver(event, await sign(raw, now - 299))).status).toBe(200)
  })

  // [D123] (rev. 4): money that differs from the invoice is no longer a 422: it goes to the balance
  test("amount_total below the invoice's, or another currency: 200, credited to the balance, the invoice still pending", async () => {
    const { user, uuid, session } = await paidSession()
    const short = await deliver(stripeEvent("checkout.session.completed", { ...session, amount_total: 999, payment_intent: `${session.payment_intent}_short` }))
    expect(short.status).toBe(200)
    expect(short.body.data).toMatchObject({ handled: true, invoice: { uuid, status: "pending" } })
    const euros = await deliver(stripeEvent("checkout.session.completed", { ...session, currency: "eur", payment_intent: `${session.payment_intent}_eur` }))
    expect(euros.status).toBe(200)
    expect(euros.body.data).toMatchObject({ handled: true, invoice: { uuid, status: "pending" } })
    expect(await statusOf(uuid)).toBe("pending")
    expect(await servicesOf(user.id)).toHaveLength(0)
    const me = await typedClient(app, { token: user.token })
    expect(await ok(me.balance.getBalance())).toEqual([
      { currency: "EUR", amount: "10.00" },
      { currency: "USD", amount: "9.99" }
    ])
  })

  test("idempotent on the event id: a replay, and the same event delivered five times at once, pay once", async () => {
    const { user, uuid, session } = await paidSession()
    const event = stripeEvent("checkout.session.completed", session)
    const raw = JSON.stringify(event)
    const signature = await sign(raw)
    const results = await Promise.all(Array.from({ length: 5 }, () => deliver(event, signature)))
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200])
    const replay = await deliver(event)
    expect(replay.status).toBe(200)
    expect(replay.body.data).toMatchObject({ event_id: event.id, handled: false, invoice: { uuid, status: "paid" } })
    expect(await servicesOf(user.id)).toHaveLength(1)
    const [paid] = await app.sql<{
      n: number
    }>`select count(*)::int as n from payment_events where invoice_id = (select id from invoices where uuid = ${uuid}::uuid)`
    expect(paid!.n).toBe(1)
  })

  test("200 to types it does not handle, and to a session not yet paid; nothing changes", async () => {
    const { uuid, session } = await paidSession()
    for (const event of [
      stripeEvent("customer.created", { id: "cus_1", object: "customer" }),
      stripeEvent("checkout.session.expired", { ...session, status: "expired" }),
      stripeEvent("checkout.session.completed", { ...session, payment_status: "unpaid" })
    ]) {
      const res = await deliver(event)
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ event_id: event.id, type: event.type, handled: false, invoice: null })
    }
    expect(await statusOf(uuid)).toBe("pending")
  })

  test("an unknown invoice, or one of the manual gateway: 404", async () => {
    const { session } = await paidSession()
    const unknown = await deliver(
      stripeEvent("checkout.session.completed", {
        ...session,
        client_reference_id: crypto.randomUUID(),
        metadata: { invoice_uuid: crypto.randomUUID() }
      })
    )
    expect(unknown.status).toBe(404)
    const manual = await order({})
    const res = await deliver(
      stripeEvent("checkout.session.completed", { ...session, client_reference_id: manual.uuid, metadata: { invoice_uuid: manual.uuid } })
    )
    expect(res.status).toBe(404)
    expect(await statusOf(manual.uuid)).toBe("pending")
  })
})

// [D110]'s `to: gateway` for Stripe invoices: the `refund` of the gateway that billing-core's refund
// route calls. Exercised here at the service level, still against the stand-in.
describe("a refund through the gateway [D110] [D112]", () => {
  const refund = (uuid: string, gatewayName: string, amount: string) =>
    app.run(
      Effect.gen(function* () {
        const invoices = yield* Invoices
        const gateways = yield* PaymentGateways
        const invoice = Option.getOrThrow(yield* invoices.byUuid(uuid))
        const gateway = Option.getOrThrow(gateways.get(gatewayName))
        if (gateway.refund === undefined) return "cannot refund" as const
        return yield* Effect.either(gateway.refund({ invoiceUuid: invoice.uuid, transactionId: invoice.transaction_id, amount, currency: invoice.currency }))
      }).pipe(Effect.provide(Layer.mergeAll(GatewaysLive, Invoices.Default).pipe(Layer.provide(DomainEventsLive))))
    )

  test("stripe: a refund of the payment intent that paid the session, in minor units", async () => {
    const { uuid, session } = await paidSession()
    expect((await deliver(stripeEvent("checkout.session.completed", session))).status).toBe(200)
    const first = await refund(uuid, "stripe", "4.00")
    const made = standIn.refunds.filter((r) => r["payment_intent"] === session.payment_intent)
    expect(made).toHaveLength(1)
    expect(first).toEqual(Either.right({ refundId: String(made[0]!["id"]) }))
    expect(made[0]).toMatchObject({ amount: 400, metadata: { invoice_uuid: uuid } })
    standIn.controls.failing = true
    try {
      const failed = await refund(uuid, "stripe", "1.00")
      expect(failed !== "cannot refund" && Either.isLeft(failed) && failed.left._tag).toBe("GatewayRefundFailed")
    } finally {
      standIn.controls.failing = false
    }
  })

  test("manual has no refund (422 errors.to for the caller); a stripe invoice an admin marked paid (no payment intent): RefundUnavailable", async () => {
    const manual = await order({})
    const staff = await staffClient()
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: manual.uuid } }))).status).toBe("paid")
    expect(await refund(manual.uuid, "manual", "1.00")).toBe("cannot refund")
    const byHand = await order()
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: byHand.uuid } }))).status).toBe("paid")
    const before = standIn.refunds.length
    const noIntent = await refund(byHand.uuid, "stripe", "1.00")
    expect(noIntent !== "cannot refund" && Either.isLeft(noIntent) && noIntent.left._tag).toBe("RefundUnavailable")
    expect(noIntent !== "cannot refund" && Either.isLeft(noIntent) && noIntent.left.message).toBe(
      "The invoice was not paid through Stripe: refund to the balance instead."
    )
    expect(standIn.refunds).toHaveLength(before)
  })
})

// [D110] `to: gateway` through the admin HTTP route, for a Stripe invoice: the stand-in (the fake
// at the edge) must receive a refund of the payment intent that paid the session.
describe("POST /v1/admin/invoices/{invoice}/refund to: gateway, Stripe [D110] [D112]", () => {
  test("201 credit note `to: gateway`; the stand-in got a refund of the session's payment intent in minor units; the rest by default; then 422 errors.amount", async () => {
    const admin = await app.createUser({ role: "admin" })
    const staff = await typedClient(app, { token: admin.token })
    const { me, uuid, session } = await paidSession()
    expect((await deliver(stripeEvent("checkout.session.completed", session))).status).toBe(200)
    const before = standIn.refunds.length
    // the typed client decodes the declared 201 `{success: true, data}` only; it sends 400 cents as "4.00"
    const res = await ok(staff.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload: { amount: 400, to: "gateway", reason: "Goodwill" } }))
    expect(res).toEqual({
      id: expect.any(Number),
      invoice_uuid: uuid,
      amount: "4.00",
      currency: "USD",
      to: "gateway",
      reason: "Goodwill",
      created_at: expect.any(Date)
    })
    expect(standIn.refunds).toHaveLength(before + 1)
    expect(standIn.refunds.at(-1)).toMatchObject({ payment_intent: session.payment_intent, amount: 400, metadata: { invoice_uuid: uuid } })
    const sent = standIn.requests.filter((r) => r.method === "POST" && r.path === "/v1/refunds").at(-1)!
    expect(sent.body).toMatchObject({ payment_intent: session.payment_intent, amount: "400" })
    // no amount: all not yet refunded (6.00 -> 600)
    const rest = await ok(staff.refundsAdmin.refundInvoice({ path: { invoice: uuid }, payload: { to: "gateway", reason: "The rest" } }))
    expect(rest).toMatchObject({ amount: "6.00", to: "gateway" })
    expect(standIn.refunds.at(-1)).toMatchObject({ payment_intent: session.payment_intent, amount: 600 })
    const detail = await ok(me.billing.getInvoice({ path: { invoice: uuid } }))
    expect(detail).toMatchObject({ status: "paid", refunded_amount: "10.00" })
    expect(detail.credit_notes.map((n) => [n.amount, n.to])).toEqual([
      ["4.00", "gateway"],
      ["6.00", "gateway"]
    ])
    const beyond = await app.post(`/v1/admin/invoices/${uuid}/refund`, { token: admin.token, body: { amount: "0.01", to: "gateway", reason: "More" } })
    expect(beyond.status).toBe(422)
    expect(Object.keys(beyond.body.errors)).toEqual(["amount"])
    expect(standIn.refunds).toHaveLength(before + 2)
  })

  test("a Stripe invoice an admin marked paid (no payment intent to refund): 422 errors.to, nothing asked of Stripe, nothing recorded", async () => {
    const admin = await app.createUser({ role: "admin" })
    const staff = await typedClient(app, { token: admin.token })
    const byHand = await order()
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: byHand.uuid } }))).status).toBe("paid")
    const before = standIn.requests.filter((r) => r.path === "/v1/refunds").length
    const res = await app.post(`/v1/admin/invoices/${byHand.uuid}/refund`, { token: admin.token, body: { to: "gateway", reason: "x" } })
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ to: ["The invoice was not paid through Stripe: refund to the balance instead."] })
    expect(standIn.requests.filter((r) => r.path === "/v1/refunds")).toHaveLength(before)
    expect(await ok(byHand.me.billing.getInvoice({ path: { invoice: byHand.uuid } }))).toMatchObject({ refunded_amount: "0.00", credit_notes: [] })
    // to the balance it can be refunded (the declared 201)
    expect(await ok(staff.refundsAdmin.refundInvoice({ path: { invoice: byHand.uuid }, payload: { to: "balance", reason: "x" } }))).toMatchObject({
      invoice_uuid: byHand.uuid,
      to: "balance"
    })
  })

  test("Stripe failing the refund: 502 in the envelope, no credit note, nothing refunded", async () => {
    const admin = await app.createUser({ role: "admin" })
    const { me, uuid, session } = await paidSession()
    expect((await deliver(stripeEvent("checkout.session.completed", session))).status).toBe(200)
    standIn.controls.failing = true
    try {
      const res = await app.post(`/v1/admin/invoices/${uuid}/refund`, { token: admin.token, body: { to: "gateway", reason: "x" } })
      expect(res.status).toBe(502)
      expect(res.body).toEqual({ success: false, message: "The payment gateway could not refund the payment." })
    } finally {
      standIn.controls.failing = false
    }
    expect(await ok(me.billing.getInvoice({ path: { invoice: uuid } }))).toMatchObject({ status: "paid", refunded_amount: "0.00", credit_notes: [] })
  })
})

describe("renewals keep the gateway [D112] [D80]", () => {
  test("a service paid through Stripe gets its renewal invoice on stripe, payable by a Checkout Session", async () => {
    const { me, uuid, session } = await paidSession()
    expect((await deliver(stripeEvent("checkout.session.completed", session))).status).toBe(200)
    const manual = await order({})
    const staff = await staffClient()
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: manual.uuid } }))).status).toBe("paid")

    app.clock.advance(28 * 86_400_000) // 30-day cycle: inside the 3 days before expiry
    await app.run(runJobsOnce)
    const renewalOf = async (paid: string) =>
      (
        await app.sql<{ uuid: string; gateway: string }>`
        select r.uuid::text as uuid, r.gateway from invoices r join invoices p on p.service_id = r.service_id
        where p.uuid = ${paid}::uuid and r.renewal_of_expiry is not null`
      )[0]!
    const renewal = await renewalOf(uuid)
    expect(renewal.gateway).toBe("stripe")
    expect((await renewalOf(manual.uuid)).gateway).toBe("manual")
    expect((await ok(me.billing.paymentUrl({ path: { invoice: renewal.uuid } }))).gateway).toBe("stripe")
    expect(checkoutCreates().at(-1)!.body).toMatchObject({ client_reference_id: renewal.uuid })
  })
})
