import { createHmac } from "node:crypto"
import { makeTestApp } from "../../support/app.ts"
import { conformance } from "./kit.ts"

// [D123] the `manual` gateway ([D40]) through the conformance kit: its "provider" is whoever holds
// PAYMENT_WEBHOOK_SECRET (a bank integration): no stand-in needed, the event is signed here.
const SECRET = "whsec_test"
const sign = (raw: string, t: number, secret = SECRET) => `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex")}`

conformance({
  name: "manual",
  start: async () => ({ app: await makeTestApp(), stop: () => {} }),
  paid: async (app, invoice, pay) => {
    const raw = JSON.stringify({
      invoice_uuid: invoice.uuid,
      status: "paid",
      transaction_id: `tx-${invoice.uuid}-${pay.payment}`,
      amount: (pay.cents / 100).toFixed(2),
      currency: pay.currency
    })
    const t = Math.floor(app.clock.get().getTime() / 1000)
    return { path: "/v1/webhooks/payments/manual", raw, headers: { "content-type": "application/json", "x-signature": sign(raw, t) } }
  },
  forge: (d) => ({ ...d, headers: { ...d.headers, "x-signature": sign(d.raw, Number(/t=(\d+)/.exec(d.headers["x-signature"]!)![1]), "whsec_other") } })
})
