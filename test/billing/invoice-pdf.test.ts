import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option } from "effect"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"

// [D113]: GET /v1/invoices/{invoice}/pdf. The text is read back with `pdftotext` (apt
// poppler-utils; .ci/run installs it), and every value [D113] names is found in it.
const pdftotext = Bun.which("pdftotext")

let app: TestApp
let staff: TypedClient

beforeAll(async () => {
  app = await makeTestApp({
    config: {
      company: { name: Option.some("Acme VPN Ltd"), address: Option.some("1 Harbour Street\nPortsmouth PO1 2AB"), taxId: Option.some("GB123456789") }
    }
  })
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Premium Plus', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'EUR')`
  await app.sql`insert into promo_codes (code, type, value, max_uses_per_user) values ('SAVE10', 'percentage', 10, 5)`
})
afterAll(() => app.dispose())

const fetchPdf = (uuid: string, token?: string) =>
  app.fetch(
    new Request(`http://localhost:3000/v1/invoices/${uuid}/pdf`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
    })
  )

const textOf = async (response: Response) => {
  const bytes = new Uint8Array(await response.arrayBuffer())
  expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe("%PDF-")
  const proc = Bun.spawnSync([pdftotext!, "-layout", "-", "-"], { stdin: bytes })
  expect(proc.exitCode).toBe(0)
  return proc.stdout.toString()
}

const order = async (user: { token: string }) => {
  const me = await typedClient(app, { token: user.token })
  return (await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1, promo_code: "save10" } }))).uuid
}

describe("GET /v1/invoices/{invoice}/pdf [D113]", () => {
  test.skipIf(pdftotext === null)("a paid invoice: an application/pdf attachment holding every value [D113] names (needs pdftotext)", async () => {
    const user = await app.createUser({ name: "Ada Lovelace", email: "ada@example.com" })
    const uuid = await order(user)
    app.clock.advance(3_600_000)
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")

    const res = await fetchPdf(uuid, user.token)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/pdf")
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="invoice-${uuid}.pdf"`)
    const text = await textOf(res)
    for (const value of [
      "Acme VPN Ltd",
      "1 Harbour Street",
      "Portsmouth PO1 2AB",
      "GB123456789", // seller
      "Ada Lovelace",
      "ada@example.com", // buyer
      uuid,
      "2026-01-15 12:00 UTC", // created
      "2026-01-15 13:00 UTC", // paid
      "Premium Plus",
      "Monthly (30 days)",
      "2026-01-15 to 2026-02-14", // the line: plan, cycle, period
      "10.00 EUR", // subtotal
      "Discount (save10)",
      "-1.00 EUR", // discount, the code as the payer typed it ([D33])
      "Balance applied",
      "-0.00 EUR", // balance applied
      "Amount paid",
      "9.00 EUR", // amount and currency
      "paid" // status
    ])
      expect(text).toContain(value)
    // COMPANY_ADDRESS keeps its lines
    const lines = text.split("\n").map((l) => l.trim())
    expect(lines).toContain("1 Harbour Street")
    expect(lines).toContain("Portsmouth PO1 2AB")
  })

  test.skipIf(pdftotext === null)("a pending invoice says so: amount due, not paid, the period from payment (needs pdftotext)", async () => {
    const user = await app.createUser({ name: "Grace Hopper" })
    const uuid = await order(user)
    const text = await textOf(await fetchPdf(uuid, user.token))
    for (const value of ["Grace Hopper", uuid, "pending", "not paid", "Amount due", "9.00 EUR", "30 days from payment"]) expect(text).toContain(value)
  })

  test("another user's invoice or an unknown one is 404; no token 401; both in the envelope", async () => {
    const owner = await app.createUser()
    const uuid = await order(owner)
    const stranger = await app.createUser()
    for (const res of [await fetchPdf(uuid, stranger.token), await fetchPdf(crypto.randomUUID(), owner.token)]) {
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ success: false, message: "Resource not found." })
    }
    const anonymous = await fetchPdf(uuid)
    expect(anonymous.status).toBe(401)
    expect((await anonymous.json()).success).toBe(false)
    expect((await fetchPdf(uuid, owner.token)).status).toBe(200)
  })

  test.skipIf(pdftotext === null)("no COMPANY_* set: the seller block says so; a Cyrillic name shows as written ([D120]) (needs pdftotext)", async () => {
    const plain = await makeTestApp({ reset: false })
    try {
      const user = await plain.createUser({ name: "Сергей Ü" })
      const placed = await plain.post("/v1/orders", { token: user.token, body: { plan_id: 1, cycle_id: 1 } })
      const res = await plain.fetch(
        new Request(`http://localhost:3000/v1/invoices/${placed.body.data.uuid}/pdf`, { headers: { authorization: `Bearer ${user.token}` } })
      )
      expect(res.status).toBe(200)
      const text = await textOf(res)
      expect(text).toContain("(seller details not configured)")
      // [D120]: the fonts are embedded, so a name in another script shows as written
      expect(text).toContain("Сергей Ü")
      expect(text).toContain("10.00 EUR")
    } finally {
      await plain.dispose()
    }
  })
})
