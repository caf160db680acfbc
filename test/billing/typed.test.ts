import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient, type TypedClient } from "../support/typed.ts"

// The billing and services rooms' main flows through the typed client (issue 24): order, invoice
// list and detail, payment link, PDF, admin mark-paid, the service, auto-renew, plan change quote,
// cancel and resume, balance, refund, admin grants. Answers are decoded by the contract's schemas.
let app: TestApp
let admin: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

const planWithCycle = async (name: string, price: number) => {
  const plan = await ok(admin.catalogAdmin.createPlan({ payload: { name, bandwidth_limit_gb: 100 } }))
  const cycle = await ok(
    admin.catalogAdmin.createCycle({
      path: { plan: plan.id },
      payload: { name: "Monthly", duration_days: 30, price: Math.round(price * 100), currency: "EUR" }
    })
  )
  return { plan, cycle }
}

test("order, invoice list and detail, payment url, PDF, cancel a pending one [D35] [D36] [D37] [D113]", async () => {
  const { cycle, plan } = await planWithCycle("Typed Billing", 19.99)
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })

  const gateways = await ok(me.billingGateways.listPaymentGateways())
  expect(gateways.map((gateway) => gateway.name)).toContain("manual")

  const invoice = await ok(me.billing.placeOrder({ payload: { plan_id: plan.id, cycle_id: cycle.id } }))
  expect(invoice).toMatchObject({
    amount: "19.99",
    currency: "EUR",
    status: "pending",
    discount: "0.00",
    promo_code: null,
    plan: { name: "Typed Billing" },
    cycle: { name: "Monthly", duration_days: 30 },
    paid_at: null
  })
  expect(invoice.due_date).toBeInstanceOf(Date)

  const page = await ok(me.billing.listInvoices({ urlParams: {} }))
  expect(page.data.map((item) => ({ uuid: item.uuid, amount: item.amount, status: item.status }))).toEqual([
    { uuid: invoice.uuid, amount: "19.99", status: "pending" }
  ])
  expect(page.meta.total).toBe(1)
  expect(await ok(me.billing.getInvoice({ path: { invoice: invoice.uuid } }))).toEqual(invoice)

  const link = await ok(me.billing.paymentUrl({ path: { invoice: invoice.uuid } }))
  expect(link.gateway).toBe("manual")
  expect(link.url.startsWith(`${app.config.publicUrl}/pay/${invoice.uuid}`)).toBe(true)

  const pdf = await ok(me.billingDocuments.invoicePdf({ path: { invoice: invoice.uuid } }))
  expect(new TextDecoder().decode(pdf.slice(0, 5))).toBe("%PDF-")

  const cancelled = await ok(me.billing.cancelInvoice({ path: { invoice: invoice.uuid } }))
  expect(cancelled).toMatchObject({ uuid: invoice.uuid, status: "cancelled" })

  // another user's invoice is a 404 as its declared class
  const stranger = await typedClient(app, { token: (await app.createUser()).token })
  expect((await fails(stranger.billing.getInvoice({ path: { invoice: invoice.uuid } })))._tag).toBe("NotFound")
})

test("admin marks an order paid: the service is active; auto-renew, change quote, cancel and resume [D34] [D108] [D111]", async () => {
  const basic = await planWithCycle("Typed Basic", 10)
  const pro = await planWithCycle("Typed Pro", 30)
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })

  const invoice = await ok(me.billing.placeOrder({ payload: { plan_id: basic.plan.id, cycle_id: basic.cycle.id } }))
  const paid = await ok(admin.billingAdmin.markPaid({ path: { invoice: invoice.uuid } }))
  expect(paid).toMatchObject({ uuid: invoice.uuid, status: "paid", amount: "10.00" })
  expect(paid.paid_at).toBeInstanceOf(Date)

  const current = await ok(me.services.currentService())
  expect(current).toMatchObject({
    status: "active",
    plan: { id: basic.plan.id, name: "Typed Basic" },
    cycle: { id: basic.cycle.id, price: "10.00", currency: "EUR" },
    cancel_at: null
  })
  expect((await ok(me.services.listServices())).map((service) => service.id)).toEqual([current.id])
  expect(await ok(me.services.getService({ path: { service: current.id } }))).toEqual(current)

  const renew = await ok(me.services.setAutoRenew({ path: { service: current.id }, payload: { auto_renew: false } }))
  expect(renew.data).toMatchObject({ auto_renew: false })
  expect((await ok(me.services.getService({ path: { service: current.id } }))).auto_renew).toBe(false)

  // moving to the pricier plan on the first day: an upgrade that costs about the difference
  const quote = await ok(me.subscriptions.changeQuote({ path: { service: current.id }, urlParams: { plan_id: pro.plan.id, cycle_id: pro.cycle.id } }))
  expect(quote.kind).toBe("upgrade")
  expect(quote.currency).toBe("EUR")
  expect(Number(quote.amount_due)).toBeGreaterThan(19)
  expect(Number(quote.amount_due)).toBeLessThanOrEqual(20)

  const cancelled = await ok(me.subscriptions.cancelService({ path: { service: current.id }, payload: { at: "period_end" } }))
  expect(cancelled).toMatchObject({ id: current.id, status: "active", cancel_at: current.expires_at })
  const resumed = await ok(me.subscriptions.resumeService({ path: { service: current.id } }))
  expect(resumed).toMatchObject({ id: current.id, status: "active", cancel_at: null })
})

test("balance: admin credit, the user's balance and ledger; a refund to the balance [D109] [D110]", async () => {
  const { cycle, plan } = await planWithCycle("Typed Refund", 12)
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  expect(await ok(me.balance.getBalance())).toEqual([])

  // the typed client speaks cents for these amounts and sends them as the decimal string ("5.00")
  const credit = await ok(admin.balanceAdmin.adjustBalance({ path: { user: user.id }, payload: { amount: 500, currency: "EUR", reason: "goodwill" } }))
  expect(credit).toMatchObject({ currency: "EUR", amount: "5.00", transaction: { amount: "5.00", currency: "EUR", reason: "goodwill", invoice_uuid: null } })
  expect(await ok(me.balance.getBalance())).toEqual([{ currency: "EUR", amount: "5.00" }])

  // the order takes the balance first ([D109]); the rest is paid by the admin, then refunded to the balance
  const invoice = await ok(me.billing.placeOrder({ payload: { plan_id: plan.id, cycle_id: cycle.id } }))
  expect(invoice).toMatchObject({ amount: "7.00", balance_applied: "5.00" })
  await ok(admin.billingAdmin.markPaid({ path: { invoice: invoice.uuid } }))
  const note = await ok(admin.refundsAdmin.refundInvoice({ path: { invoice: invoice.uuid }, payload: { amount: 300, to: "balance", reason: "outage" } }))
  expect(note).toMatchObject({ invoice_uuid: invoice.uuid, amount: "3.00", currency: "EUR", to: "balance", reason: "outage" })

  expect(await ok(me.balance.getBalance())).toEqual([{ currency: "EUR", amount: "3.00" }])
  const ledger = await ok(me.balance.listBalanceTransactions({ urlParams: {} }))
  expect(ledger.data.map((row) => row.amount).sort()).toEqual(["-5.00", "3.00", "5.00"].sort())
  const detail = await ok(me.billing.getInvoice({ path: { invoice: invoice.uuid } }))
  expect(detail.refunded_amount).toBe("3.00")
  expect(detail.credit_notes.map((n) => n.amount)).toEqual(["3.00"])
})

test("admin grants a service and suspends it [D34] [D70]", async () => {
  const { cycle, plan } = await planWithCycle("Typed Grant", 8)
  const user = await app.createUser()
  const granted = await ok(admin.servicesAdmin.grantService({ path: { user: user.id }, payload: { plan_id: plan.id, cycle_id: cycle.id } }))
  expect(granted).toMatchObject({ status: "active", plan: { id: plan.id, name: "Typed Grant" }, cycle: { id: cycle.id, price: "8.00" } })
  const suspended = await ok(admin.servicesAdmin.updateService({ path: { service: granted.id }, payload: { status: "suspended" } }))
  expect(suspended).toMatchObject({ id: granted.id, status: "suspended" })

  const me = await typedClient(app, { token: user.token })
  expect((await ok(me.services.getService({ path: { service: granted.id } }))).status).toBe("suspended")
})

test("plan changes: an upgrade is an invoice that switches the plan once paid; a downgrade is scheduled and removed [D108]", async () => {
  const basic = await planWithCycle("Typed Change Basic", 10)
  const pro = await planWithCycle("Typed Change Pro", 30)
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  await ok(
    admin.billingAdmin.markPaid({
      path: { invoice: (await ok(me.billing.placeOrder({ payload: { plan_id: basic.plan.id, cycle_id: basic.cycle.id } }))).uuid }
    })
  )
  const service = await ok(me.services.currentService())

  // the change answers either an invoice (upgrade, 201) or the service (downgrade, 200): both decode
  const upgrade = await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: pro.plan.id, cycle_id: pro.cycle.id } }))
  if (!("uuid" in upgrade)) throw new Error("an upgrade answers an invoice")
  expect(upgrade).toMatchObject({ status: "pending", currency: "EUR", plan: { name: "Typed Change Pro" }, cycle: { name: "Monthly", duration_days: 30 } })
  await ok(admin.billingAdmin.markPaid({ path: { invoice: upgrade.uuid } }))
  expect((await ok(me.services.getService({ path: { service: service.id } }))).plan).toMatchObject({ id: pro.plan.id, name: "Typed Change Pro" })

  const downgrade = await ok(me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: basic.plan.id, cycle_id: basic.cycle.id } }))
  if ("uuid" in downgrade) throw new Error("a downgrade answers the service")
  expect(downgrade.plan.id).toBe(pro.plan.id)
  expect(downgrade.scheduled_change).toMatchObject({ plan: { id: basic.plan.id, name: "Typed Change Basic" }, cycle: { id: basic.cycle.id, price: "10.00" } })
  const removed = await ok(me.subscriptions.removeChange({ path: { service: service.id } }))
  expect(removed).toMatchObject({ id: service.id, scheduled_change: null })
})

test("admin creates an invoice for a user with another amount; the user sees it [D35] [D70]", async () => {
  const { cycle, plan } = await planWithCycle("Typed Admin Invoice", 20)
  const user = await app.createUser()
  const invoice = await ok(admin.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: plan.id, cycle_id: cycle.id, amount: "4.50" } }))
  expect(invoice).toMatchObject({ amount: "4.50", currency: "EUR", status: "pending", plan: { name: "Typed Admin Invoice" } })
  const me = await typedClient(app, { token: user.token })
  expect((await ok(me.billing.listInvoices({ urlParams: {} }))).data.map((item) => ({ uuid: item.uuid, amount: item.amount }))).toEqual([
    { uuid: invoice.uuid, amount: "4.50" }
  ])
})
