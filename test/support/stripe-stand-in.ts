/**
 * A LOCAL STAND-IN for Stripe's HTTP API (a fake at the edge we cannot reach from tests, [D112]).
 * The real `stripe` package talks to it through STRIPE_API_URL. It implements only the calls the
 * product makes — create, retrieve and expire a Checkout Session, create a refund — honours
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
  const idempotent = new Map<string, Response>()
  let counter = 0
  /** `failing = true`: every call answers 500, as Stripe down would */
  const controls = { failing: false }
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
        livemode: false
      }
      sessions.set(id, session)
      return json(200, session)
    }
    const retrieve = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path)
    if (method === "GET" && retrieve) {
      const session = sessions.get(retrieve[1]!)
      return session ? json(200, session) : stripeError(404, "No such checkout.session")
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
    controls,
    /** the payer paid at Stripe: the session completes with a payment intent; returned as a webhook event's object */
    pay: (sessionId: string, paymentStatus: "paid" | "unpaid" = "paid") => {
      const session = sessions.get(sessionId)
      if (!session) throw new Error(`no session ${sessionId}`)
      session.status = "complete"
      session.payment_status = paymentStatus
      session.payment_intent = `pi_test_${++counter}`
      session.url = null
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
