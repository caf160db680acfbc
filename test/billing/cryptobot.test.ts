import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option, Redacted } from "effect"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { type CryptoBotStandIn, signCryptoBot, startCryptoBotStandIn } from "../support/cryptobot-stand-in.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D123] the `cryptobot` gateway beyond the conformance kit: what it asks Crypto Pay for, its
// listing, its webhook's other updates. Crypto Pay is reached through its LOCAL STAND-IN.
const TOKEN = "777:AAcryptoTOKEN"
let standIn: CryptoBotStandIn
let app: TestApp

beforeAll(async () => {
  standIn = startCryptoBotStandIn({ token: TOKEN })
  app = await makeTestApp({ config: { cryptobot: Option.some({ token: Redacted.make(TOKEN), apiUrl: standIn.url, assets: ["USDT", "TON"] }) } })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '12.50', 'EUR')`
})
afterAll(async () => {
  await app.dispose()
  standIn.stop()
})

const order = async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const { uuid } = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, gateway: "cryptobot" } }))
  return { user, me, uuid }
}

describe("GET /v1/payment-gateways [D123]", () => {
  test("lists cryptobot when CRYPTOBOT_TOKEN is set, not otherwise; its webhook then verifies nothing (401)", async () => {
    const anyone = await typedClient(app)
    expect(await ok(anyone.billingGateways.listPaymentGateways())).toEqual([
      { name: "manual", display_name: "Bank transfer" },
      { name: "cryptobot", display_name: "Crypto (CryptoBot)" }
    ])
    const plain = await makeTestApp({ reset: false })
    try {
      const plainClient = await typedClient(plain)
      expect((await ok(plainClient.billingGateways.listPaymentGateways())).map((g) => g.name)).toEqual(["manual"])
      const raw = JSON.stringify({ update_id: 1, update_type: "invoice_paid", payload: {} })
      const res = await plain.post("/v1/webhooks/payments/cryptobot", { raw, headers: { "crypto-pay-api-signature": signCryptoBot(TOKEN, raw) } })
      expect(res.status).toBe(401)
      const user = await plain.createUser()
      expect((await plain.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1, gateway: "cryptobot" } })).status).toBe(422)
    } finally {
      await plain.dispose()
    }
  })
})

describe("the payment is a Crypto Pay fiat invoice [D123]", () => {
  test("createInvoice with the token header, currency_type fiat, the fiat, the amount as a decimal string, the uuid as payload, the assets; the URL is bot_invoice_url, reused while open", async () => {
    const { me, uuid } = await order()
    const before = standIn.requests.length
    const link = await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    const sent = standIn.requests.slice(before)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.method).toBe("POST")
    expect(sent[0]!.path).toBe("/api/createInvoice")
    expect(sent[0]!.headers["crypto-pay-api-token"]).toBe(TOKEN)
    expect(sent[0]!.body).toMatchObject({ currency_type: "fiat", fiat: "EUR", amount: "12.50", payload: uuid, accepted_assets: "USDT,TON" })
    const made = [...standIn.invoices.values()].find((i) => i.payload === uuid)!
    expect(link).toEqual({
      url: made.bot_invoice_url,
      gateway: "cryptobot",
      expires_at: new Date(app.clock.get().getTime() + 3600_000).toISOString()
    })
    // a second call while it is payable: the same invoice, no second call to Crypto Pay
    expect((await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))).url).toBe(made.bot_invoice_url)
    expect(standIn.requests.length).toBe(before + 1)
    // once it expired, a new one
    app.clock.advance(3601_000)
    expect((await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))).url).not.toBe(made.bot_invoice_url)
  })

  test("Crypto Pay down: 503, and the token never appears in the answer", async () => {
    const { user, uuid } = await order()
    standIn.controls.failing = true
    try {
      const res = await app.get(`/v1/invoices/${uuid}/payment-url`, { token: user.token })
      expect(res.status).toBe(503)
      expect(res.text).not.toContain(TOKEN)
    } finally {
      standIn.controls.failing = false
    }
  })
})

describe("POST /v1/webhooks/payments/cryptobot [D123]", () => {
  test("invoice_paid pays the invoice (the amount and fiat of the Crypto Pay invoice); its answer says so", async () => {
    const { me, user, uuid } = await order()
    await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    const made = [...standIn.invoices.values()].find((i) => i.payload === uuid)!
    const update = standIn.paidUpdate(made.invoice_id)
    const res = await app.post("/v1/webhooks/payments/cryptobot", update)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ type: "invoice_paid", handled: true, outcome: "paid", invoice: { uuid, status: "paid", gateway: "cryptobot" } })
    // a redelivery with another update id of the same Crypto Pay invoice is the same payment
    const again = standIn.paidUpdate(made.invoice_id)
    expect((await app.post("/v1/webhooks/payments/cryptobot", again)).body.data).toMatchObject({ handled: false, outcome: "duplicate" })
    expect((await app.sql<{ n: number }>`select count(*)::int as n from services where user_id = ${user.id}`)[0]!.n).toBe(1)
  })

  test("other update types are answered 200 and change nothing; a body that is no update is 422; a tampered body 401", async () => {
    const raw = JSON.stringify({
      update_id: 9,
      update_type: "invoice_expired",
      request_date: "2026-01-01T00:00:00Z",
      payload: { invoice_id: 1, status: "expired", amount: "1", bot_invoice_url: "x" }
    })
    const ignored = await app.post("/v1/webhooks/payments/cryptobot", { raw, headers: { "crypto-pay-api-signature": signCryptoBot(TOKEN, raw) } })
    expect(ignored.status).toBe(200)
    expect(ignored.body.data).toEqual({ event_id: "9", type: "invoice_expired", handled: false, outcome: null, invoice: null })
    const junk = JSON.stringify({ hello: "world" })
    expect((await app.post("/v1/webhooks/payments/cryptobot", { raw: junk, headers: { "crypto-pay-api-signature": signCryptoBot(TOKEN, junk) } })).status).toBe(
      422
    )
    expect(
      (await app.post("/v1/webhooks/payments/cryptobot", { raw: ` ${raw}`, headers: { "crypto-pay-api-signature": signCryptoBot(TOKEN, raw) } })).status
    ).toBe(401)
    expect((await app.post("/v1/webhooks/payments/cryptobot", { raw, headers: { "crypto-pay-api-signature": signCryptoBot("other", raw) } })).status).toBe(401)
    expect((await app.post("/v1/webhooks/payments/cryptobot", { raw })).status).toBe(401)
  })

  test("an invoice of another gateway, or none: 404", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const manual = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
    const made = standIn.extra(manual.uuid, "12.50", "EUR")
    expect((await app.post("/v1/webhooks/payments/cryptobot", standIn.paidUpdate(made.invoice_id))).status).toBe(404)
    const nowhere = standIn.extra("00000000-0000-4000-8000-000000000000", "12.50", "EUR")
    expect((await app.post("/v1/webhooks/payments/cryptobot", standIn.paidUpdate(nowhere.invoice_id))).status).toBe(404)
  })
})
