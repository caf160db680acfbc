/**
 * A LOCAL STAND-IN for the Crypto Pay API of Telegram's @CryptoBot (a fake at the edge we cannot
 * reach from tests, [D123]). The product's client talks to it through CRYPTOBOT_API_URL (its base:
 * methods live at `$URL/<method>`). It implements only what the product calls — `createInvoice` —
 * checks `Crypto-Pay-API-Token`, answers `{ok, result}` / `{ok: false, error}` as Crypto Pay does,
 * records every request, and builds signed `invoice_paid` updates as Crypto Pay would send them.
 */
import { createHash, createHmac } from "node:crypto"

export interface StandInCryptoInvoice {
  invoice_id: number
  hash: string
  currency_type: "fiat"
  fiat: string
  amount: string
  accepted_assets: Array<string>
  payload: string
  description: string
  status: "active" | "paid" | "expired"
  bot_invoice_url: string
  created_at: string
  expiration_date: string
  paid_asset?: string
  paid_amount?: string
  paid_at?: string
}

export interface CryptoRecordedRequest {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: Record<string, unknown>
}

const answer = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

/** [D123]: what Crypto Pay puts in `crypto-pay-api-signature`: hex HMAC-SHA256 of the body keyed by SHA-256(token) */
export const signCryptoBot = (token: string, raw: string) => createHmac("sha256", createHash("sha256").update(token).digest()).update(raw).digest("hex")

export const startCryptoBotStandIn = (options: { readonly token: string; readonly base?: string }) => {
  const base = options.base ?? "/api"
  const requests: Array<CryptoRecordedRequest> = []
  const invoices = new Map<number, StandInCryptoInvoice>()
  /** `failing = true`: every call answers 500, as Crypto Pay down would */
  const controls = { failing: false }
  let counter = 1000
  let updates = 5000

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (request) => {
      const url = new URL(request.url)
      const text = request.method === "GET" ? "" : await request.text()
      let body: Record<string, unknown> = {}
      try {
        body = text.length > 0 ? JSON.parse(text) : Object.fromEntries(url.searchParams)
      } catch {
        return answer(400, { ok: false, error: { code: 400, name: "BAD_JSON" } })
      }
      const headers = Object.fromEntries(request.headers.entries())
      requests.push({ method: request.method, path: url.pathname, headers, body })
      if (headers["crypto-pay-api-token"] !== options.token) return answer(401, { ok: false, error: { code: 401, name: "UNAUTHORIZED" } })
      if (controls.failing) return answer(500, { ok: false, error: { code: 500, name: "INTERNAL_ERROR" } })
      if (url.pathname === `${base}/createInvoice`) {
        if (body["currency_type"] !== "fiat" || typeof body["fiat"] !== "string" || typeof body["amount"] !== "string") {
          return answer(400, { ok: false, error: { code: 400, name: "PARAMS_INVALID" } })
        }
        const id = ++counter
        const now = new Date()
        const invoice: StandInCryptoInvoice = {
          invoice_id: id,
          hash: `IV${id}`,
          currency_type: "fiat",
          fiat: body["fiat"],
          amount: body["amount"],
          accepted_assets: String(body["accepted_assets"] ?? "").split(","),
          payload: String(body["payload"] ?? ""),
          description: String(body["description"] ?? ""),
          status: "active",
          bot_invoice_url: `https://t.me/CryptoBot?start=IV${id}`,
          created_at: now.toISOString(),
          expiration_date: new Date(now.getTime() + Number(body["expires_in"] ?? 3600) * 1000).toISOString()
        }
        invoices.set(id, invoice)
        return answer(200, { ok: true, result: invoice })
      }
      return answer(404, { ok: false, error: { code: 404, name: "METHOD_NOT_FOUND" } })
    }
  })

  /** a Crypto Pay invoice for `payload`, made here without the product (a second payment of an invoice) */
  const extra = (payload: string, amount: string, fiat: string): StandInCryptoInvoice => {
    const id = ++counter
    const invoice: StandInCryptoInvoice = {
      invoice_id: id,
      hash: `IV${id}`,
      currency_type: "fiat",
      fiat,
      amount,
      accepted_assets: ["USDT"],
      payload,
      description: "",
      status: "active",
      bot_invoice_url: `https://t.me/CryptoBot?start=IV${id}`,
      created_at: new Date().toISOString(),
      expiration_date: new Date(Date.now() + 3600_000).toISOString()
    }
    invoices.set(id, invoice)
    return invoice
  }

  return {
    url: `http://127.0.0.1:${server.port}${base}`,
    requests,
    invoices,
    controls,
    extra,
    /**
     * the payer paid at Crypto Pay: the update it would POST, as its raw body and headers.
     * `amount` / `fiat` override what the invoice says (a payment that is not the invoice's)
     */
    paidUpdate: (invoiceId: number, override: { readonly amount?: string; readonly fiat?: string; readonly updateId?: number } = {}) => {
      const invoice = invoices.get(invoiceId)
      if (!invoice) throw new Error(`no crypto invoice ${invoiceId}`)
      invoice.status = "paid"
      invoice.paid_asset = "USDT"
      invoice.paid_amount = override.amount ?? invoice.amount
      invoice.paid_at = new Date().toISOString()
      const update = {
        update_id: override.updateId ?? ++updates,
        update_type: "invoice_paid",
        request_date: new Date().toISOString(),
        payload: { ...invoice, amount: override.amount ?? invoice.amount, fiat: override.fiat ?? invoice.fiat }
      }
      const raw = JSON.stringify(update)
      return { raw, headers: { "content-type": "application/json", "crypto-pay-api-signature": signCryptoBot(options.token, raw) } }
    },
    stop: () => server.stop(true)
  }
}

export type CryptoBotStandIn = ReturnType<typeof startCryptoBotStandIn>
