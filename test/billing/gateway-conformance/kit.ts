/**
 * [D123] The conformance kit: every payment gateway adapter runs through the same cases against a
 * local stand-in of its provider, through the HTTP API. A new adapter is done when this passes for
 * it: write a `GatewayDriver` (how its provider says "paid", how it signs) and call
 * `conformance(driver)` from a test file of its own (see manual.test.ts, stripe.test.ts,
 * cryptobot.test.ts beside this file).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { TestApp } from "../../support/app.ts"
import { ok, typedClient } from "../../support/typed.ts"

/** a webhook delivery as the provider would POST it */
export interface Delivery {
  readonly path: string
  readonly raw: string
  readonly headers: Record<string, string>
}

/** an invoice the kit ordered through `POST /v1/orders` with the gateway, its payment created */
export interface KitInvoice {
  readonly uuid: string
  readonly amount: string
  readonly currency: string
  readonly token: string
  readonly userId: number
}

export interface GatewayDriver {
  /** the gateway's name, as `gateway` of an order */
  readonly name: string
  /** starts the provider's stand-in and an app with the gateway enabled (the kit loads the catalogue) */
  readonly start: () => Promise<{ readonly app: TestApp; readonly stop: () => void }>
  /**
   * the provider's word that `invoice` was paid `cents` in `currency`, signed as the provider
   * signs. `payment` names the payment: the same name is the same payment at the provider (a
   * redelivery), another name another payment of the same invoice.
   */
  readonly paid: (app: TestApp, invoice: KitInvoice, pay: { readonly cents: number; readonly currency: string; readonly payment: string }) => Promise<Delivery>
  /** the same delivery with a signature that is not the provider's */
  readonly forge: (delivery: Delivery) => Delivery
}

const PRICE = "10.00"
const CURRENCY = "USD"

export const conformance = (driver: GatewayDriver) => {
  let app: TestApp
  let stop: () => void = () => {}

  beforeAll(async () => {
    const started = await driver.start()
    app = started.app
    stop = started.stop
    await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
    await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, ${PRICE}, ${CURRENCY})`
  })
  afterAll(async () => {
    await app.dispose()
    stop()
  })

  /** an order with this gateway, its payment created at the provider ("create a payment") */
  const order = async (): Promise<KitInvoice> => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    // the typed client decodes only the declared statuses (201, then 200)
    const placed = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, gateway: driver.name } }))
    expect(placed.gateway).toBe(driver.name)
    const link = await ok(me.billing.paymentUrl({ path: { invoice: placed.uuid } }))
    expect(link).toMatchObject({ gateway: driver.name, url: expect.any(String), expires_at: expect.any(String) })
    return { uuid: placed.uuid, amount: placed.amount, currency: placed.currency, token: user.token, userId: user.id }
  }

  const deliver = (d: Delivery) => app.post(d.path, { raw: d.raw, headers: d.headers })

  /** everything a payment can change, for one user and invoice */
  const state = async (invoice: KitInvoice) => ({
    invoice: (await app.sql<{ status: string }>`select status from invoices where uuid = ${invoice.uuid}::uuid`)[0]!.status,
    services: (
      await app.sql<{ status: string; expires_at: Date }>`
      select status, expires_at from services where user_id = ${invoice.userId} order by id`
    ).map((s) => `${s.status}:${s.expires_at.toISOString()}`),
    balances: Object.fromEntries(
      (
        await app.sql<{ currency: string; amount: string }>`
      select currency, amount::text as amount from balances where user_id = ${invoice.userId} and amount <> 0 order by currency`
      ).map((b) => [b.currency, b.amount])
    ),
    payments: Number(
      (
        await app.sql<{ n: number }>`
      select count(*)::int as n from payment_events e join invoices i on i.id = e.invoice_id where i.uuid = ${invoice.uuid}::uuid`
      )[0]!.n
    )
  })

  const cents = (amount: string) => Math.round(Number(amount) * 100)

  describe(`gateway conformance: ${driver.name} [D123]`, () => {
    test("paid once", async () => {
      const invoice = await order()
      const res = await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" }))
      expect(res.status).toBe(200)
      const after = await state(invoice)
      expect(after.invoice).toBe("paid")
      expect(after.services).toHaveLength(1)
      expect(after.services[0]!.startsWith("active:")).toBe(true)
      expect(after.balances).toEqual({})
      expect(after.payments).toBe(1)
    })

    test("duplicate event", async () => {
      const invoice = await order()
      const delivery = await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" })
      expect((await deliver(delivery)).status).toBe(200)
      const once = await state(invoice)
      const again = await deliver(delivery)
      expect(again.status).toBe(200)
      expect(await state(invoice)).toEqual(once)
    })

    test("second payment of a paid invoice", async () => {
      const invoice = await order()
      expect((await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" }))).status).toBe(200)
      const paid = await state(invoice)
      const second = await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p2" }))
      expect(second.status).toBe(200)
      const after = await state(invoice)
      // [D109]: the second payment is credited to the balance; the service is not extended twice
      expect(after.services).toEqual(paid.services)
      expect(after.invoice).toBe("paid")
      expect(after.balances).toEqual({ [invoice.currency]: invoice.amount })
    })

    test("out-of-order events", async () => {
      const invoices = [await order(), await order(), await order()]
      const deliveries = await Promise.all(invoices.map((i, n) => driver.paid(app, i, { cents: cents(i.amount), currency: i.currency, payment: `p${n}` })))
      for (const n of [2, 0, 1]) expect((await deliver(deliveries[n]!)).status).toBe(200)
      // and a late redelivery of the first in between changes nothing
      expect((await deliver(deliveries[2]!)).status).toBe(200)
      for (const invoice of invoices) {
        const after = await state(invoice)
        expect(after.invoice).toBe("paid")
        expect(after.services).toHaveLength(1)
        expect(after.payments).toBe(1)
      }
    })

    test("cancelled invoice", async () => {
      const invoice = await order()
      const delivery = await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" })
      const me = await typedClient(app, { token: invoice.token })
      expect((await ok(me.billing.cancelInvoice({ path: { invoice: invoice.uuid } }))).status).toBe("cancelled")
      const res = await deliver(delivery)
      // money received is never lost: 200, credited to the balance, the invoice stays cancelled
      expect(res.status).toBe(200)
      const after = await state(invoice)
      expect(after.invoice).toBe("cancelled")
      expect(after.services).toEqual([])
      expect(after.balances).toEqual({ [invoice.currency]: invoice.amount })
    })

    test("wrong signature", async () => {
      const invoice = await order()
      const before = await state(invoice)
      const res = await deliver(driver.forge(await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" })))
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Invalid signature." })
      expect(await state(invoice)).toEqual(before)
    })

    test("underpayment", async () => {
      const invoice = await order()
      const res = await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount) - 250, currency: invoice.currency, payment: "p1" }))
      expect(res.status).toBe(200)
      const after = await state(invoice)
      expect(after.invoice).toBe("pending")
      expect(after.services).toEqual([])
      expect(after.balances).toEqual({ [invoice.currency]: "7.50" })
    })

    test("overpayment", async () => {
      const invoice = await order()
      const res = await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount) + 250, currency: invoice.currency, payment: "p1" }))
      expect(res.status).toBe(200)
      const after = await state(invoice)
      expect(after.invoice).toBe("paid")
      expect(after.services).toHaveLength(1)
      expect(after.balances).toEqual({ [invoice.currency]: "2.50" })
    })

    test("other currency", async () => {
      const invoice = await order()
      const res = await deliver(await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: "EUR", payment: "p1" }))
      expect(res.status).toBe(200)
      const after = await state(invoice)
      expect(after.invoice).toBe("pending")
      expect(after.services).toEqual([])
      expect(after.balances).toEqual({ EUR: invoice.amount })
    })

    test("parallel deliveries", async () => {
      const invoice = await order()
      const delivery = await driver.paid(app, invoice, { cents: cents(invoice.amount), currency: invoice.currency, payment: "p1" })
      const answers = await Promise.all(Array.from({ length: 20 }, () => deliver(delivery)))
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200))
      const after = await state(invoice)
      expect(after.invoice).toBe("paid")
      // activated once: one service of one period, one payment, nothing credited
      expect(after.services).toHaveLength(1)
      const period = (
        await app.sql<{ days: number }>`
        select round(extract(epoch from expires_at - starts_at) / 86400)::int as days from services where user_id = ${invoice.userId}`
      )[0]!.days
      expect(period).toBe(30)
      expect(after.payments).toBe(1)
      expect(after.balances).toEqual({})
    })
  })
}
