/**
 * The client in use: `BASE_URL=http://localhost:3000 bun run example.ts` registers a user, reads
 * the plans, orders the first one and lists the pending invoices. A test runs it against a fresh
 * server (test/client/client-package.test.ts).
 */
import { Console, Effect } from "effect"
import { client } from "./src/index.ts"

const baseUrl = process.env["BASE_URL"] ?? "http://localhost:3000"
const email = `example-${Date.now()}@example.com`
const password = "Example-Pass-2026!"

const program = Effect.gen(function*() {
  const anonymous = yield* client({ baseUrl })
  const status = yield* anonymous.system.status()
  yield* Console.log(`database: ${status.data.database}`)
  const plans = yield* anonymous.catalog.listPlans()
  yield* Console.log(`plans: ${plans.length}`)

  // without `X-Session: cookie` the answer carries the token ([D119])
  const registered = yield* anonymous.accounts.register({
    payload: { name: "Example", email, password, password_confirmation: password }
  })
  if (!("token" in registered)) return yield* Effect.dieMessage("registration answered no token")
  const { token, user } = registered
  yield* Console.log(`registered ${user.email}`)
  const me = yield* client({ baseUrl, token })
  const plan = plans[0]
  const cycles = plan === undefined ? [] : yield* anonymous.catalog.listCycles({ path: { plan: plan.id } })
  const cycle = cycles[0]
  if (plan !== undefined && cycle !== undefined) {
    const invoice = yield* me.billing.placeOrder({ payload: { plan_id: plan.id, cycle_id: cycle.id } })
    yield* Console.log(`invoice ${invoice.uuid}: ${invoice.amount} ${invoice.currency}`)
  }
  const page = yield* me.billing.listInvoices({ urlParams: { page: 1, status: "pending" } })
  yield* Console.log(`pending invoices: ${page.meta.total}`)
})

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exit(1)
})
