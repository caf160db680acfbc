/**
 * The LOCAL STAND-IN for Stripe's HTTP API (stripe-stand-in.ts) as a process, for
 * scripts/check-binary-billing.sh: prints its URL, serves until killed. Key: STRIPE_SECRET_KEY.
 */
import { startStripeStandIn } from "./stripe-stand-in.ts"

const standIn = startStripeStandIn({ secretKey: process.env["STRIPE_SECRET_KEY"] ?? "sk_test_binary" })
console.log(standIn.url)
process.on("SIGTERM", () => {
  standIn.stop()
  process.exit(0)
})
