/**
 * A LOCAL STAND-IN for the Telegram Bot API (a fake at the edge we cannot reach from tests,
 * [D125]). The product's grammY client talks to it through TELEGRAM_API_URL, exactly as it would to
 * api.telegram.org: `POST /bot<token>/<method>`. It answers `getMe` and `sendMessage` only, records
 * every message it accepted (with the moment it arrived), and can be told to answer 429 with
 * `retry_after`, 403 for a chat that blocked the bot, or to stop listening (Telegram unreachable).
 */

export interface SentMessage {
  readonly chat_id: string
  readonly text: string
  /** `performance.now()`-independent wall time in ms when the request arrived */
  readonly at: number
}

export interface StandInCall {
  readonly method: string
  readonly at: number
  readonly status: number
}

export const startTelegramStandIn = (options: { readonly token: string; readonly username?: string; readonly port?: number }) => {
  const username = options.username ?? "vpn_test_bot"
  /** messages the stand-in accepted (answered ok) */
  const sent: Array<SentMessage> = []
  /** every call, answered or refused */
  const calls: Array<StandInCall> = []
  const controls = {
    /** the next N sendMessage calls answer 429 with this retry_after (seconds) */
    rateLimit: { times: 0, retryAfter: 1 },
    /** chats that blocked the bot: sendMessage answers 403 */
    blocked: new Set<string>(),
    /** each sendMessage waits this long before answering (ms) */
    delayMs: 0
  }

  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })
  const error = (status: number, description: string, parameters?: Record<string, unknown>) =>
    json(status, { ok: false, error_code: status, description, ...(parameters ? { parameters } : {}) })

  const readParams = async (request: Request): Promise<Record<string, unknown>> => {
    const type = request.headers.get("content-type") ?? ""
    if (request.method === "GET") return Object.fromEntries(new URL(request.url).searchParams)
    if (type.includes("application/json")) return (await request.json()) as Record<string, unknown>
    if (type.includes("multipart/form-data") || type.includes("application/x-www-form-urlencoded")) {
      const form = await request.formData()
      return Object.fromEntries([...form.entries()].map(([k, v]) => [k, String(v)]))
    }
    const text = await request.text()
    return text === "" ? {} : (JSON.parse(text) as Record<string, unknown>)
  }

  const handle = async (request: Request): Promise<Response> => {
    const at = Date.now()
    const match = /^\/bot([^/]+)\/([A-Za-z]+)$/.exec(new URL(request.url).pathname)
    if (match === null) return error(404, "Not Found")
    const [, token, method] = match
    const answer = (response: Response) => {
      calls.push({ method: method!, at, status: response.status })
      return response
    }
    if (token !== options.token) return answer(error(401, "Unauthorized"))
    const params = await readParams(request)
    if (method === "getMe") {
      return answer(json(200, { ok: true, result: { id: 777000111, is_bot: true, first_name: "VPN Test", username } }))
    }
    if (method === "sendMessage") {
      if (controls.delayMs > 0) await Bun.sleep(controls.delayMs)
      const chatId = String(params["chat_id"])
      if (controls.rateLimit.times > 0) {
        controls.rateLimit.times--
        const retryAfter = controls.rateLimit.retryAfter
        return answer(error(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter }))
      }
      if (controls.blocked.has(chatId)) return answer(error(403, "Forbidden: bot was blocked by the user"))
      const text = String(params["text"] ?? "")
      sent.push({ chat_id: chatId, text, at })
      return answer(
        json(200, {
          ok: true,
          result: { message_id: sent.length, date: Math.floor(at / 1000), chat: { id: Number(chatId), type: "private" }, text }
        })
      )
    }
    return answer(error(404, "Not Found: method not found"))
  }

  let server: ReturnType<typeof Bun.serve> | undefined
  const start = (port = options.port ?? 0) => {
    server = Bun.serve({ hostname: "127.0.0.1", port, fetch: handle })
    return server.port
  }
  const port = start()

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    username,
    sent,
    calls,
    controls,
    /** messages to one chat */
    to: (chatId: string | number) => sent.filter((m) => m.chat_id === String(chatId)),
    /** Telegram unreachable: nothing listens on the port */
    stop: () => server?.stop(true),
    /** listening again on the same port */
    restart: () => {
      start(port)
    }
  }
}

export type TelegramStandIn = ReturnType<typeof startTelegramStandIn>
