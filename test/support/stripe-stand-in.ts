/**
 * A LOCAL STAND-IN for Stripe's HTTP API (a fake at the edge we cannot reach from tests, [D112]).
 * The real `stripe` package talks to it through STRIPE_API_URL. It implements only the calls the
 * product makes — create, retrieve and expire a Checkout Session, create a refund; [D124]: create a
 * customer, retrieve a payment intent and a payment method, charge a saved card off-session
 * (`controls.declineOffSession` declines it as a bank would), detach a payment method — honours
 * `Idempotency-Key` as Stripe does, and records every request so tests can assert what was sent.
 */

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  /** the form body decoded into nested objects (`line_items[0][price_data][currency]`) */
  readonly body: Record<string, unknown>
}

export interface StandInSession {
  id: string
  object: "checkout.session"
  mode: string
  url: string | null
  status: "open" | "complete" | "expired"
  payment_status: "unpaid" | "paid"
  amount_total: number
  currency: string
  client_reference_id: string | null
  metadata: Record<string, string>
  success_url: string
  cancel_url: string
  payment_intent: string | null
  created: number
  expires_at: number
  livemode: false
  /** [D124]: the customer a card is saved on, when the payer agreed to keep it */
  customer: string | null
  /** [D124]: `off_session` when Checkout saves the card */
  setup_future_usage: string | null
}

export interface StandInIntent {
  id: string
  object: "payment_intent"
  amount: number
  currency: string
  status: "succeeded" | "requires_payment_method"
  customer: string | null
  payment_method: string | null
  setup_future_usage: string | null
  off_session?: boolean
  metadata: Record<string, unknown>
}

type Nested = Record<string, unknown>

/** `a[b][0][c]=v` form fields as nested objects (arrays kept as objects keyed "0", "1", ...) */
const decodeForm = (text: string): Nested => {
  const root: Nested = {}
  for (const [key, value] of new URLSearchParams(text)) {
    const parts = key.replace(/\]/g, "").split("[")
    let node = root
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value
      else node = (node[part] ??= {}) as Nested
    })
  }
  return root
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "request-id": `req_${crypto.randomUUID()}` } })

const stripeError = (status: number, message: string) => json(status, { error: { type: "invalid_request_error", message } })

export const startStripeStandIn = (options: { readonly secretKey: string; readonly now?: () => Date }) => {
  const requests: Array<RecordedRequest> = []
  const sessions = new Map<string, StandInSession>()
  const refunds: Array<Record<string, unknown>> = []
  const customers = new Map<string, Record<string, unknown>>()
  const intents = new Map<string, StandInIntent>()
  const methods = new Map<string, { id: string; object: "payment_method"; type: "card"; customer: string | null; card: { brand: string; last4: string; exp_month: number; exp_year: number } }>()
  const idempotent = new Map<string, Response>()
  let counter = 0
  /** `failing = true`: every call answers 500, as Stripe down would; `declineOffSession`: off-session charges are declined */
  const controls = { failing: false, declineOffSession: false }
  const now = () => Math.floor((options.now?.() ?? new Date()).getTime() / 1000)

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    const text = request.method === "GET" ? url.searchParams.toString() : await request.text()
    const body = decodeForm(text)
    const headers = Object.fromEntries(request.headers.entries())
    requests.push({ method: request.method, path: url.pathname, headers, body })
    if (headers["authorization"] !== `Bearer ${options.secretKey}`) return stripeError(401, "Invalid API Key provided.")
    if (controls.failing) return stripeError(500, "stand-in told to fail")
    const key = headers["idempotency-key"]
    if (key !== undefined && idempotent.has(key)) return idempotent.get(key)!.clone()
    const response = route(request.method, url.pathname, body)
    if (key !== undefined && response.status < 500) idempotent.set(key, response.clone())
    return response
  }

  const route = (method: string, path: string, body: Nested): Response => {
    if (method === "POST" && path === "/v1/checkout/sessions") {
      const item = ((body["line_items"] as Nested | undefined)?.["0"] ?? {}) as Nested
      const price = (item["price_data"] ?? {}) as Nested
      const intentData = (body["payment_intent_data"] ?? {}) as Nested
      const id = `cs_test_${++counter}_${crypto.randomUUID().replaceAll("-", "")}`
      const session: StandInSession = {
        id,
        object: "checkout.session",
        mode: String(body["mode"]),
        url: `https://checkout.stripe.test/c/pay/${id}`,
        status: "open",
        payment_status: "unpaid",
        amount_total: Number(price["unit_amount"]) * Number(item["quantity"] ?? 1),
        currency: String(price["currency"]),
        client_reference_id: (body["client_reference_id"] as string | undefined) ?? null,
        metadata: (body["metadata"] ?? {}) as Record<string, string>,
        success_url: String(body["success_url"]),
        cancel_url: String(body["cancel_url"]),
        payment_intent: null,
        created: now(),
        expires_at: now() + 24 * 3600,
        livemode: false,
        customer: (body["customer"] as string | undefined) ?? null,
        setup_future_usage: (intentData["setup_future_usage"] as string | undefined) ?? null
      }
      sessions.set(id, session)
      return json(200, session)
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path)
    if (method === "GET" && retrieve) {
      const session = sessions.get(retrieve[1]!)
      return session ? json(200, session) : stripeError(404, "No such checkout.session")
    }
    if (method === "POST" && path === "/v1/customers") {
      const customer = { id: `cus_test_${++counter}`, object: "customer", metadata: body["metadata"] ?? {} }
      customers.set(customer.id, customer)
      return json(200, customer)
    }
    const intent = /^\/v1\/payment_intents\/([^/]+)$/.exec(path)
    if (method === "GET" && intent) {
      const found = intents.get(intent[1]!)
      return found ? json(200, found) : stripeError(404, "No such payment_intent")
    }
    if (method === "POST" && path === "/v1/payment_intents") {
      const pm = methods.get(String(body["payment_method"]))
      if (!pm || pm.customer !== body["customer"]) return stripeError(400, "No such PaymentMethod for this customer")
      const made: StandInIntent = {
        id: `pi_test_${++counter}`,
        object: "payment_intent",
        amount: Number(body["amount"]),
        currency: String(body["currency"]),
        status: controls.declineOffSession ? "requires_payment_method" : "succeeded",
        customer: String(body["customer"]),
        payment_method: pm.id,
        setup_future_usage: null,
        off_session: body["off_session"] === "true",
        metadata: (body["metadata"] ?? {}) as Record<string, unknown>
      }
      intents.set(made.id, made)
      if (controls.declineOffSession) {
        return json(402, { error: { type: "card_error", code: "card_declined", decline_code: "insufficient_funds", message: "Your card has insufficient funds.", payment_intent: made } })
      }
      return json(200, made)
    }
    const pmRead = /^\/v1\/payment_methods\/([^/]+)$/.exec(path)
    if (method === "GET" && pmRead) {
      const found = methods.get(pmRead[1]!)
      return found ? json(200, found) : stripeError(404, "No such PaymentMethod")
    }
    const detach = /^\/v1\/payment_methods\/([^/]+)\/detach$/.exec(path)
    if (method === "POST" && detach) {
      const found = methods.get(detach[1]!)
      if (!found || found.customer === null) return stripeError(400, "The payment method is not attached to a customer")
      found.customer = null
      return json(200, found)
    }
    // issue 34: an invoice no longer pending has its open session expired; only an open one can be
    const expire = /^\/v1\/checkout\/sessions\/([^/]+)\/expire$/.exec(path)
    if (method === "POST" && expire) {
      const session = sessions.get(expire[1]!)
      if (!session) return stripeError(404, "No such checkout.session")
      if (session.status !== "open") return stripeError(400, "Only Checkout Sessions with a status of `open` can be expired.")
      session.status = "expired"
      session.url = null
      return json(200, session)
    }
    if (method === "POST" && path === "/v1/refunds") {
      const intent = String(body["payment_intent"])
      if (![...sessions.values()].some((s) => s.payment_intent === intent)) return stripeError(404, `No such payment_intent: '${intent}'`)
      const refund = { id: `re_test_${++counter}`, object: "refund", amount: Number(body["amount"]), payment_intent: intent, status: "succeeded", metadata: body["metadata"] ?? {} }
      refunds.push(refund)
      return json(200, refund)
    }
    return stripeError(404, `Unrecognized request URL (${method}: ${path})`)
  }

  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle })

  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    sessions,
    refunds,
    customers,
    intents,
    methods,
    controls,
    /** the payer paid at Stripe: the session completes with a payment intent; returned as a webhook event's object */
    pay: (sessionId: string, paymentStatus: "paid" | "unpaid" = "paid") => {
      const session = sessions.get(sessionId)
      if (!session) throw new Error(`no session ${sessionId}`)
      session.status = "complete"
      session.payment_status = paymentStatus
      session.payment_intent = `pi_test_${++counter}`
      session.url = null
      // [D124]: the card the payer used; saved on the customer when they agreed to keep it
      const pm = { id: `pm_test_${++counter}`, object: "payment_method" as const, type: "card" as const, customer: session.setup_future_usage === "off_session" ? session.customer : null, card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030 } }
      methods.set(pm.id, pm)
      intents.set(session.payment_intent, {
        id: session.payment_intent,
        object: "payment_intent",
        amount: session.amount_total,
        currency: session.currency,
        status: "succeeded",
        customer: session.customer,
        payment_method: pm.id,
        setup_future_usage: session.setup_future_usage,
        metadata: session.metadata
      })
      return { ...session }
    },
    expire: (sessionId: string) => {
      const session = sessions.get(sessionId)
      if (!session) throw new Error(`no session ${sessionId}`)
      session.status = "expired"
      session.url = null
    },
    stop: () => server.stop(true)
  }
}

export type StripeStandIn = ReturnType<typeof startStripeStandIn>

/** a webhook event as Stripe sends it, around an object */
export const stripeEvent = (type: string, object: unknown, id = `evt_test_${crypto.randomUUID().replaceAll("-", "")}`) => ({
  id,
  object: "event",
  api_version: "2025-01-01",
  created: Math.floor(Date.now() / 1000),
  livemode: false,
  pending_webhooks: 1,
  request: { id: null, idempotency_key: null },
  type,
  data: { object }
})
