import { Option, Redacted } from "effect"
import Stripe from "stripe"
import { makeTestApp } from "../../support/app.ts"
import { startStripeStandIn, stripeEvent } from "../../support/stripe-stand-in.ts"
import { conformance } from "./kit.ts"

// [D123] the `stripe` gateway ([D112]) through the conformance kit, against the LOCAL STAND-IN of
// Stripe's API (test/support/stripe-stand-in.ts); events are signed with the package's test helper.
const SECRET_KEY = "sk_test_kit"
const WEBHOOK_SECRET = "whsec_kit"
const stripe = new Stripe(SECRET_KEY)
const standIn = startStripeStandIn({ secretKey: SECRET_KEY })

conformance({
  name: "stripe",
  start: async () => ({
    app: await makeTestApp({
      config: { stripe: Option.some({ secretKey: Redacted.make(SECRET_KEY), webhookSecret: Redacted.make(WEBHOOK_SECRET), apiUrl: Option.some(standIn.url) }) }
    }),
    stop: () => standIn.stop()
  }),
  paid: async (app, invoice, pay) => {
    // the payment URL made the invoice's session; another payment is another (completed) session
    const made = [...standIn.sessions.values()].find((s) => s.client_reference_id === invoice.uuid)!
    const session = {
      ...made,
      id: pay.payment === "p1" ? made.id : `${made.id}_${pay.payment}`,
      status: "complete",
      payment_status: "paid",
      url: null,
      amount_total: pay.cents,
      currency: pay.currency.toLowerCase(),
      payment_intent: `pi_kit_${invoice.uuid.slice(0, 8)}_${pay.payment}`
    }
    const raw = JSON.stringify(stripeEvent("checkout.session.completed", session, `evt_kit_${invoice.uuid.slice(0, 8)}_${pay.payment}`))
    const signature = await stripe.webhooks.generateTestHeaderStringAsync({
      payload: raw,
      secret: WEBHOOK_SECRET,
      timestamp: Math.floor(app.clock.get().getTime() / 1000)
    })
    return { path: "/v1/webhooks/payments/stripe", raw, headers: { "content-type": "application/json", "stripe-signature": signature } }
  },
  forge: (d) => ({
    ...d,
    headers: {
      ...d.headers,
      "stripe-signature": d.headers["stripe-signature"]!.replace(/v1=([0-9a-f])/, (_, first: string) => `v1=${first === "0" ? "1" : "0"}`)
    }
  })
})
