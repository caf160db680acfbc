import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import fc from "fast-check"
import { changeKind, prorate } from "../../src/billing/Proration.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// The money properties of [D108]-[D110] (issue 26): proration never credits more than was paid;
// credit plus amount due never loses or invents a cent; a balance never goes negative and its ledger
// always sums to it, under any interleaving of credits, debits, orders, cancellations, payments and
// refunds (a command sequence through the HTTP API against a model, bounded in runs).

describe("proration [D108] (property)", () => {
  const DAY = 86_400_000
  const input = fc.record({
    paidCents: fc.integer({ min: 0, max: 10_000_000 }),
    priceCents: fc.integer({ min: 0, max: 10_000_000 }),
    start: fc.integer({ min: 0, max: 400 * DAY }),
    length: fc.integer({ min: 0, max: 400 * DAY }),
    at: fc.integer({ min: -50 * DAY, max: 900 * DAY })
  })

  test("the credit is between 0 and what was paid; credit + amount due = price + excess to the balance, to the cent", () => {
    fc.assert(
      fc.property(input, ({ at, length, paidCents, priceCents, start }) => {
        const r = prorate({ paidCents, priceCents, periodStart: new Date(start), periodEnd: new Date(start + length), now: new Date(at) })
        expect(Number.isInteger(r.creditCents) && Number.isInteger(r.amountDueCents) && Number.isInteger(r.excessCents)).toBe(true)
        expect(r.creditCents).toBeGreaterThanOrEqual(0)
        expect(r.creditCents).toBeLessThanOrEqual(paidCents)
        expect(r.amountDueCents).toBeGreaterThanOrEqual(0)
        expect(r.excessCents).toBeGreaterThanOrEqual(0)
        // nothing lost, nothing invented: what the customer owes and is credited balances to the price
        expect(r.creditCents + r.amountDueCents).toBe(priceCents + r.excessCents)
        expect(r.amountDueCents === 0 || r.excessCents === 0).toBe(true)
      }),
      { numRuns: 2000 }
    )
  })

  test("the credit never grows as time passes, and a period used up credits nothing", () => {
    fc.assert(
      fc.property(input, fc.integer({ min: 0, max: 30 * DAY }), ({ at, length, paidCents, priceCents, start }, later) => {
        const base = { paidCents, priceCents, periodStart: new Date(start), periodEnd: new Date(start + length) }
        const now = prorate({ ...base, now: new Date(at) })
        const after = prorate({ ...base, now: new Date(at + later) })
        expect(after.creditCents).toBeLessThanOrEqual(now.creditCents)
        expect(prorate({ ...base, now: new Date(start + length) }).creditCents).toBe(0)
      }),
      { numRuns: 1000 }
    )
  })

  test("upgrade means a higher price per day, compared exactly", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 3650 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer({ min: 1, max: 3650 }),
        (p1, d1, p2, d2) => {
          const kind = changeKind({ priceCents: p1, days: d1 }, { priceCents: p2, days: d2 })
          expect(kind).toBe(p2 * d1 > p1 * d2 ? "upgrade" : "downgrade")
          // the same cycle is never an upgrade
          expect(changeKind({ priceCents: p1, days: d1 }, { priceCents: p1, days: d1 })).toBe("downgrade")
        }
      ),
      { numRuns: 1000 }
    )
  })
})

describe("the balance under any interleaving [D109] [D110] (property, through the API)", () => {
  let app: TestApp
  let admin: { id: number; token: string }
  beforeAll(async () => {
    app = await makeTestApp()
    await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
    await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
      values (1, 'Monthly', 30, '10.00', 'USD'), (1, 'Weekly', 7, '3.00', 'USD')`
    admin = await app.createUser({ role: "admin" })
  })
  afterAll(() => app.dispose())

  type Command =
    | { readonly kind: "credit"; readonly cents: number }
    | { readonly kind: "debit"; readonly cents: number }
    | { readonly kind: "order"; readonly cycle: 1 | 2 }
    | { readonly kind: "cancel"; readonly pick: number }
    | { readonly kind: "pay"; readonly pick: number }
    | { readonly kind: "refund"; readonly pick: number; readonly cents: number }

  const command: fc.Arbitrary<Command> = fc.oneof(
    fc.record({ kind: fc.constant("credit" as const), cents: fc.integer({ min: 1, max: 2500 }) }),
    fc.record({ kind: fc.constant("debit" as const), cents: fc.integer({ min: 1, max: 2500 }) }),
    fc.record({ kind: fc.constant("order" as const), cycle: fc.constantFrom(1 as const, 2 as const) }),
    fc.record({ kind: fc.constant("cancel" as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant("pay" as const), pick: fc.nat() }),
    fc.record({ kind: fc.constant("refund" as const), pick: fc.nat(), cents: fc.integer({ min: 1, max: 1200 }) })
  )

  const money = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, "0")}`
  const cents = (text: string) => Math.round(Number(text) * 100)

  test("the API's balance equals the model's after every step, is never negative, and the ledger sums to it", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 10 }), async (commands) => {
        const user = await app.createUser()
        const me = await typedClient(app, { token: user.token })
        let model = 0
        const invoices: Array<{ uuid: string; status: string; applied: number; paid: number; refunded: number }> = []
        for (const c of commands) {
          if (c.kind === "credit" || c.kind === "debit") {
            const signed = c.kind === "credit" ? c.cents : -c.cents
            const res = await app.post(`/v1/admin/users/${user.id}/balance`, {
              token: admin.token,
              body: { amount: (signed < 0 ? "-" : "") + money(Math.abs(signed)), currency: "USD", reason: "property" }
            })
            if (model + signed < 0) expect(res.status).toBe(422)
            else {
              expect(res.status).toBe(201)
              model += signed
            }
          } else if (c.kind === "order") {
            // the declared 201, decoded
            const placed = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: c.cycle } }))
            const price = c.cycle === 1 ? 1000 : 300
            const applied = Math.min(model, price)
            model -= applied
            expect(cents(placed.balance_applied)).toBe(applied)
            expect(cents(placed.amount)).toBe(price - applied)
            invoices.push({ uuid: placed.uuid, status: placed.status, applied, paid: price, refunded: 0 })
            expect(placed.status).toBe(applied === price ? "paid" : "pending")
          } else if (invoices.length > 0) {
            const invoice = invoices[c.pick % invoices.length]!
            if (c.kind === "cancel") {
              const res = await app.post(`/v1/invoices/${invoice.uuid}/cancel`, { token: user.token })
              if (invoice.status === "pending") {
                expect(res.status).toBe(200)
                model += invoice.applied
                invoice.status = "cancelled"
              } else expect(res.status).toBe(422)
            } else if (c.kind === "pay") {
              const res = await app.post(`/v1/admin/invoices/${invoice.uuid}/mark-paid`, { token: admin.token })
              if (invoice.status === "pending") invoice.status = "paid"
              if (invoice.status !== "cancelled") expect(res.status).toBe(200)
            } else {
              const res = await app.post(`/v1/admin/invoices/${invoice.uuid}/refund`, {
                token: admin.token,
                body: { amount: money(c.cents), to: "balance", reason: "property" }
              })
              if (invoice.status === "paid" && c.cents <= invoice.paid - invoice.refunded) {
                expect(res.status).toBe(201)
                invoice.refunded += c.cents
                model += c.cents
              } else expect(res.status).toBe(422)
            }
          }
          const shown = (await ok(me.balance.getBalance())).find((b) => b.currency === "USD")
          expect(shown === undefined ? 0 : cents(shown.amount)).toBe(model)
          expect(model).toBeGreaterThanOrEqual(0)
        }
        const [sums] = await app.sql<{ balance: string; ledger: string }>`
        select coalesce((select amount from balances where user_id = ${user.id} and currency = 'USD'), 0)::numeric(12,2)::text as balance,
               coalesce((select sum(amount) from balance_transactions where user_id = ${user.id}), 0)::numeric(12,2)::text as ledger`
        expect(sums!.ledger).toBe(sums!.balance)
      }),
      { numRuns: 12 }
    )
  }, 120_000)
})
