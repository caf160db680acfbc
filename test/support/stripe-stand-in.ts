import { createHmac } from "node:crypto"

/**
 * A LOCAL STAND-IN for Stripe's HTTP API (a fake at the edge we cannot reach from tests, [D112]).
 * The real `stripe` package talks to it through STRIPE_API_URL. It implements only the calls the
 * product makes — create, retrieve and expire a Checkout Session, create a refund; [D124]: create a
 * customer, retrieve a payment intent and a payment method, charge a saved card off-session
 * (`controls.declineOffSession` declines it as a bank would), detach a payment method — honours
 * `Idempotency-Key` as Stripe does, and records every request so tests can assert what was sent.
 * Issue 36: it also plays Stripe's hosted Checkout page at the session's `url` (`/c/pay/<id>`): the
 * amount and a "Pay" button; pressing it completes the session, sends the signed
 * `checkout.session.completed` webhook to the API set by `deliverWebhooksTo` (as Stripe would) and
 * redirects the browser to the session's `success_url`.
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

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!)

/** `Stripe-Signature` as Stripe signs a webhook: `t=<unix>,v1=<HMAC-SHA256 of "<t>.<body>">` */
export const stripeSignature = (raw: string, secret: string, timestamp = Math.floor(Date.now() / 1000)) =>
  `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${raw}`).digest("hex")}`

/** the amount in minor units as a person reads it (`$9.99`) */
const formatMinor = (minor: number, currency: string) => {
  const format = new Intl.NumberFormat("en", { style: "currency", currency: currency.toUpperCase() })
  return format.format(minor / 10 ** (format.resolvedOptions().maximumFractionDigits ?? 2))
}

/** the hosted Checkout page of a session: what it buys, the amount, a Pay button (a form, no script) */
const checkoutPage = (session: StandInSession, product: string, message?: string) =>
  new Response(
    `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Checkout (Stripe stand-in)</title>
<style>body{font-family:sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
.amount{font-size:2rem;font-weight:bold}button{font-size:1.1rem;padding:.6rem 2rem;background:#4b3fd6;color:#fff;border:0;border-radius:6px}
.note{color:#555}</style></head>
<body><main>
<h1>Pay ${escapeHtml(product)}</h1>
<p class="note">A local stand-in for Stripe Checkout (tests only).</p>
<p class="amount" aria-label="Amount due">${escapeHtml(formatMinor(session.amount_total, session.currency))}</p>
${
  message !== undefined
    ? `<p role="alert">${escapeHtml(message)}</p>`
    : `<form method="post" action="/c/pay/${encodeURIComponent(session.id)}"><button type="submit">Pay</button></form>`
}
</main></body></html>`,
    { status: message === undefined ? 200 : 409, headers: { "content-type": "text/html; charset=utf-8" } }
  )

export const startStripeStandIn = (options: { readonly secretKey: string; readonly now?: () => Date }) => {
  const requests: Array<RecordedRequest> = []
  const sessions = new Map<string, StandInSession>()
  const refunds: Array<Record<string, unknown>> = []
  const customers = new Map<string, Record<string, unknown>>()
  const intents = new Map<string, StandInIntent>()
  const methods = new Map<
    string,
    { id: string; object: "payment_method"; type: "card"; customer: string | null; card: { brand: string; last4: string; exp_month: number; exp_year: number } }
  >()
  const idempotent = new Map<string, Response>()
  /** each session's product name, as the Checkout page shows it */
  const products = new Map<string, string>()
  /** where the hosted Checkout page sends `checkout.session.completed`, and with which secret */
  let webhooks: { readonly url: string; readonly secret: string } | undefined
  /** what the hosted Checkout page's webhooks were answered */
  const deliveries: Array<{ readonly sessionId: string; readonly status: number }> = []
  let counter = 0
  /** `failing = true`: every call answers 500, as Stripe down would; `declineOffSession`: off-session charges are declined */
  const controls: { failing: boolean; declineOffSession: boolean; onOffSession?: (() => void) | undefined } = { failing: false, declineOffSession: false }
  const now = () => Math.floor((options.now?.() ?? new Date()).getTime() / 1000)

  const handle = async (request: Request): Promise<Response> => {
    const url = new URL(request.url)
    // the hosted Checkout page: a browser's, not an API call (no key, not recorded)
    const hosted = /^\/c\/pay\/([^/]+)$/.exec(url.pathname)
    if (hosted) return checkout(request.method, decodeURIComponent(hosted[1]!))
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
        url: `${base()}/c/pay/${id}`,
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
      products.set(id, String(((price["product_data"] ?? {}) as Nested)["name"] ?? "your order"))
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
      // a test's hook: what happens while the charge is on its way (time passing, say)
      controls.onOffSession?.()
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
        return json(402, {
          error: {
            type: "card_error",
            code: "card_declined",
            decline_code: "insufficient_funds",
            message: "Your card has insufficient funds.",
            payment_intent: made
          }
        })
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
      const refund = {
        id: `re_test_${++counter}`,
        object: "refund",
        amount: Number(body["amount"]),
        payment_intent: intent,
        status: "succeeded",
        metadata: body["metadata"] ?? {}
      }
      refunds.push(refund)
      return json(200, refund)
    }
    return stripeError(404, `Unrecognized request URL (${method}: ${path})`)
  }

  /** the payer pays at the session's page: Stripe completes it, signs the webhook and sends the browser back */
  const checkout = async (method: string, id: string): Promise<Response> => {
    const session = sessions.get(id)
    if (!session) return new Response("No such Checkout Session", { status: 404 })
    const product = products.get(id) ?? "your order"
    if (session.status !== "open") return checkoutPage(session, product, "This Checkout Session is no longer available.")
    if (method === "GET") return checkoutPage(session, product)
    if (method !== "POST") return new Response(null, { status: 405 })
    const paid = pay(id)
    if (webhooks !== undefined) {
      const raw = JSON.stringify(stripeEvent("checkout.session.completed", paid))
      const answer = await fetch(webhooks.url, {
        method: "POST",
        headers: { "content-type": "application/json", "stripe-signature": stripeSignature(raw, webhooks.secret) },
        body: raw
      })
      deliveries.push({ sessionId: id, status: answer.status })
      if (!answer.ok) return checkoutPage(paid, product, `The webhook was answered ${answer.status}.`)
    }
    return new Response(null, { status: 303, headers: { location: paid.success_url } })
  }

  /** the payer paid at Stripe: the session completes with a payment intent; returned as a webhook event's object */
  const pay = (sessionId: string, paymentStatus: "paid" | "unpaid" = "paid") => {
    const session = sessions.get(sessionId)
    if (!session) throw new Error(`no session ${sessionId}`)
    session.status = "complete"
    session.payment_status = paymentStatus
    session.payment_intent = `pi_test_${++counter}`
    session.url = null
    // [D124]: the card the payer used; saved on the customer when they agreed to keep it
    const pm = {
      id: `pm_test_${++counter}`,
      object: "payment_method" as const,
      type: "card" as const,
      customer: session.setup_future_usage === "off_session" ? session.customer : null,
      card: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030 }
    }
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
  }

  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle })
  const base = () => `http://127.0.0.1:${server.port}`

  return {
    url: base(),
    requests,
    sessions,
    refunds,
    customers,
    intents,
    methods,
    controls,
    /** the payer paid at Stripe: the session completes with a payment intent; returned as a webhook event's object */
    pay,
    deliveries,
    /** the hosted Checkout page's `checkout.session.completed` goes to `url`, signed with `secret` */
    deliverWebhooksTo: (url: string, secret: string) => {
      webhooks = { url, secret }
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
