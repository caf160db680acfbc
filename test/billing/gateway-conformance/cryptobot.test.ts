import { Option, Redacted } from "effect"
import { makeTestApp } from "../../support/app.ts"
import { startCryptoBotStandIn } from "../../support/cryptobot-stand-in.ts"
import { conformance } from "./kit.ts"

// [D123] the `cryptobot` gateway through the conformance kit, against the LOCAL STAND-IN of the
// Crypto Pay API (test/support/cryptobot-stand-in.ts), which signs its updates as Crypto Pay does.
const TOKEN = "12345:AAkitTOKEN"
const standIn = startCryptoBotStandIn({ token: TOKEN })
/** the Crypto Pay invoice of each (invoice, payment): the first is the one the payment URL made */
const cryptoInvoices = new Map<string, number>()

conformance({
  name: "cryptobot",
  start: async () => ({
    app: await makeTestApp({ config: { cryptobot: Option.some({ token: Redacted.make(TOKEN), apiUrl: standIn.url, assets: ["USDT", "TON", "BTC"] }) } }),
    stop: () => standIn.stop()
  }),
  paid: async (_app, invoice, pay) => {
    const key = `${invoice.uuid}:${pay.payment}`
    if (!cryptoInvoices.has(key)) {
      const made = [...standIn.invoices.values()].find((i) => i.payload === invoice.uuid)!
      cryptoInvoices.set(key, pay.payment === "p1" ? made.invoice_id : standIn.extra(invoice.uuid, invoice.amount, invoice.currency).invoice_id)
    }
    const update = standIn.paidUpdate(cryptoInvoices.get(key)!, {
      amount: (pay.cents / 100).toFixed(2),
      fiat: pay.currency,
      updateId: Number(cryptoInvoices.get(key)) * 10
    })
    return { path: "/v1/webhooks/payments/cryptobot", ...update }
  },
  forge: (d) => ({ ...d, headers: { ...d.headers, "crypto-pay-api-signature": "0".repeat(64) } })
})
