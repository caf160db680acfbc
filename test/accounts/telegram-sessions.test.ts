import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createHash, createHmac } from "node:crypto"
import { Option, Redacted } from "effect"
import { Secret, TOTP } from "otpauth"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { readAuthResult } from "../../web/portal/telegram.tsx"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { startTelegramStandIn, type TelegramStandIn } from "../support/telegram-stand-in.ts"
import { ok, typedClient } from "../support/typed.ts"
import { anyAddress, register } from "./helpers.ts"

// [D125] x [D119]: signing in with Telegram from the portal, which never holds a token. With
// `X-Session: cookie` both Telegram sign-in routes answer `{user}` and set the `vpn_session` and
// `vpn_csrf` cookies, as `POST /v1/auth/register` does; and `GET /v1/auth/telegram` tells the
// portal whether to offer it (and the bot's public id for Telegram's login page). The Bot API is a
// LOCAL STAND-IN (test/support/telegram-stand-in.ts); every hash is computed here with node:crypto
// as Telegram documents it.
setDefaultTimeout(30_000)

/** the bot token of Telegram's own documentation example */
const TOKEN = "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
const SECRET = "webhook-secret_for-tests"

let app: TestApp
let bot: TelegramStandIn

beforeAll(async () => {
  bot = startTelegramStandIn({ token: TOKEN })
  app = await makeTestApp({
    config: {
      telegram: Option.some({ botToken: Redacted.make(TOKEN), webhookSecret: Redacted.make(SECRET), apiUrl: Option.some(bot.url) })
    }
  })
})
afterAll(async () => {
  await app.dispose()
  bot.stop()
})

const waitUntil = async (check: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline && !check()) await Bun.sleep(20)
  return check()
}

let updateId = 7000
let chatIds = 6_000_000_000
const newChat = () => ++chatIds

/** links `chatId` to the user the way a person does it: the t.me link, then /start in the chat */
const linkChat = async (user: { token: string }, chatId: number) => {
  const me = await typedClient(app, { token: user.token })
  const link = await ok(me.telegram.createTelegramLink())
  const code = new URL(link.url).searchParams.get("start")!
  const before = bot.to(chatId).length
  const hook = await app.post("/v1/webhooks/telegram", {
    headers: { "x-telegram-bot-api-secret-token": SECRET },
    body: {
      update_id: ++updateId,
      message: {
        message_id: updateId,
        date: Math.floor(app.clock.get().getTime() / 1000),
        text: `/start ${code}`,
        chat: { id: chatId, type: "private", first_name: "Ada" },
        from: { id: chatId, is_bot: false, first_name: "Ada", username: "ada_l", language_code: "en" }
      }
    }
  })
  expect(hook.status).toBe(200)
  expect(await waitUntil(() => bot.to(chatId).length > before)).toBe(true)
}

const widget = (id: number) => {
  const fields: Record<string, string | number> = { id, first_name: "Ada", username: "ada_l", auth_date: Math.floor(app.clock.get().getTime() / 1000) }
  const check = Object.keys(fields)
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join("\n")
  return { ...fields, hash: createHmac("sha256", createHash("sha256").update(TOKEN).digest()).update(check).digest("hex") }
}

const initData = (userId: number) => {
  const pairs: Record<string, string> = {
    query_id: `AAH${userId}`,
    user: JSON.stringify({ id: userId, first_name: "Ada", username: "ada_l", language_code: "en" }),
    auth_date: String(Math.floor(app.clock.get().getTime() / 1000))
  }
  const check = Object.keys(pairs)
    .sort()
    .map((k) => `${k}=${pairs[k]}`)
    .join("\n")
  const secret = createHmac("sha256", "WebAppData").update(TOKEN).digest()
  return new URLSearchParams({ ...pairs, hash: createHmac("sha256", secret).update(check).digest("hex") }).toString()
}

const COOKIE = { "x-session": "cookie" }

interface SetCookie {
  readonly value: string
  readonly attributes: Record<string, string>
}

const setCookies = (headers: Headers): Record<string, SetCookie> => {
  const out: Record<string, SetCookie> = {}
  for (const line of headers.getSetCookie()) {
    const [pair, ...rest] = line.split(";").map((part) => part.trim())
    const at = pair!.indexOf("=")
    const attributes: Record<string, string> = {}
    for (const attribute of rest) {
      const eq = attribute.indexOf("=")
      if (eq === -1) attributes[attribute.toLowerCase()] = ""
      else attributes[attribute.slice(0, eq).toLowerCase()] = attribute.slice(eq + 1)
    }
    out[pair!.slice(0, at)] = { value: decodeURIComponent(pair!.slice(at + 1)), attributes }
  }
  return out
}

/** the headers a browser sends with the two cookies; `csrf` the X-CSRF-Token a script adds */
const asBrowser = (cookies: Record<string, SetCookie>, csrf?: string): Record<string, string> => ({
  cookie: `vpn_session=${encodeURIComponent(cookies["vpn_session"]!.value)}; vpn_csrf=${cookies["vpn_csrf"]!.value}`,
  ...(csrf !== undefined ? { "x-csrf-token": csrf } : {})
})

/** a cookie session works as a token would: reads, a write with the CSRF header, 403 without it */
const expectCookieSession = async (cookies: Record<string, SetCookie>, userId: number) => {
  expect(cookies["vpn_session"]!.value).toMatch(/^[0-9]+\|[A-Za-z0-9]{40}$/)
  expect(cookies["vpn_session"]!.attributes).toEqual({ "max-age": String(30 * 86_400), path: "/", httponly: "", samesite: "Strict" })
  expect(cookies["vpn_csrf"]!.value).toMatch(/^[0-9a-f]{64}$/)
  expect(cookies["vpn_csrf"]!.attributes).toEqual({ "max-age": String(30 * 86_400), path: "/", samesite: "Strict" })
  const browser = await typedClient(app, { headers: asBrowser(cookies) })
  expect<number>((await ok(browser.accounts.currentSession())).user.id).toBe(userId)
  const body = { email_notifications: false }
  const refused = await app.put("/v1/account/settings", { headers: asBrowser(cookies), body })
  expect(refused.status).toBe(403)
  expect(refused.body).toEqual({ success: false, message: "CSRF token mismatch." })
  const withCsrf = await typedClient(app, { headers: asBrowser(cookies, cookies["vpn_csrf"]!.value) })
  expect((await ok(withCsrf.accounts.updateSettings({ payload: body }))).data).toMatchObject(body)
  // a session like any other ([D119]): listed, and the cookie's is the current one
  const sessions = await ok(browser.accounts.listSessions())
  expect(sessions.filter((s) => s.current)).toHaveLength(1)
}

describe("GET /v1/auth/telegram: the portal asks whether to offer sign-in with Telegram [D125]", () => {
  test("configured: 200 {enabled: true, bot_id} to a guest; never the token's secret part", async () => {
    const res = await app.get("/v1/auth/telegram")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, data: { enabled: true, bot_id: 110201543 } })
    expect(res.text).not.toContain("AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw")
  })

  test("not configured: 200 {enabled: false, bot_id: null} (the other Telegram routes stay 404)", async () => {
    const plain = await makeTestApp({ reset: false })
    try {
      const guest = await typedClient(plain)
      const config = await ok(guest.telegram.telegramSignInConfig())
      expect(config).toEqual({ enabled: false, bot_id: null })
      expect((await plain.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: { id: 1, auth_date: 1, hash: "00" } })).status).toBe(404)
    } finally {
      await plain.dispose()
    }
  })
})

describe("sign-in with Telegram and X-Session: cookie [D125] [D119]", () => {
  test("Login Widget: 200 {data: {user}} with no token; the session is in the two cookies", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const res = await app.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: widget(chat) })
    expect(res.status).toBe(200)
    expect(Object.keys(res.body.data)).toEqual(["user"])
    // the user as `GET /v1/auth/session` shows it, never its password hash
    expect(res.body.data.user).toMatchObject({ id: user.id, email: user.email, status: 1, role: "user", locale: "en" })
    expect(res.body.data.user.password_hash).toBeUndefined()
    expect(res.headers.get("cache-control")).toBe("no-store")
    const cookies = setCookies(res.headers)
    expect(res.text).not.toContain(cookies["vpn_session"]!.value)
    await expectCookieSession(cookies, user.id)
  })

  test("Mini App initData: the same", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const res = await app.post("/v1/auth/telegram/webapp", { headers: { ...anyAddress(), "x-session": " Cookie " }, body: { init_data: initData(chat) } })
    expect(res.status).toBe(200)
    expect(Object.keys(res.body.data)).toEqual(["user"])
    expect(res.body.data.user.id).toBe(user.id)
    await expectCookieSession(setCookies(res.headers), user.id)
  })

  test("without the header, or with another value: the token as before, and no cookie", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    for (const headers of [anyAddress(), { ...anyAddress(), "x-session": "token" }]) {
      const res = await app.post("/v1/auth/telegram/webapp", { headers, body: { init_data: initData(chat) } })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ token: expect.any(String), user: { id: user.id, name: "Ada Lovelace", email: user.email, status: 1 } })
      expect(res.headers.getSetCookie()).toEqual([])
      app.clock.advance(1_000)
    }
  })

  test("a refused sign-in sets no cookie: bad hash, unlinked account, a second factor missing", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const forged = { ...widget(chat), username: "mallory" }
    const bad = await app.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: forged })
    expect(bad.status).toBe(401)
    expect(bad.body).toEqual({ success: false, message: "Invalid Telegram login." })
    expect(bad.headers.getSetCookie()).toEqual([])
    const unlinked = await app.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: widget(newChat()) })
    expect(unlinked.status).toBe(401)
    expect(unlinked.body.message).toBe("Telegram account not linked.")
    expect(unlinked.headers.getSetCookie()).toEqual([])

    // two-factor on: 422 errors.otp first, then the same widget data with the code signs in
    app.clock.advance(61_000)
    const me = await typedClient(app, { token: user.token })
    const setup = await ok(me.accounts.setUpTwoFactor())
    const code = () => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(setup.secret), timestamp: app.clock.get().getTime() })
    await ok(me.accounts.confirmTwoFactor({ payload: { code: code() } }))
    app.clock.advance(61_000)
    const signed = widget(chat)
    const missing = await app.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: signed })
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({ otp: ["The otp field is required."] })
    expect(missing.headers.getSetCookie()).toEqual([])
    const right = await app.post("/v1/auth/telegram", { headers: { ...anyAddress(), ...COOKIE }, body: { ...signed, otp: code() } })
    expect(right.status).toBe(200)
    expect(right.body.data.user.two_factor).toBe(true)
    await expectCookieSession(setCookies(right.headers), user.id)
  })

  test("the portal's reading of Telegram's login page answer (#tgAuthResult) keeps every signed value: it signs in", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    // as oauth.telegram.org returns it: base64url (no padding) of the fields' JSON in UTF-8,
    // numbers as numbers, a Cyrillic name, a photo URL with `/` and `_`
    const fields: Record<string, string | number> = {
      id: chat,
      first_name: "Ада",
      last_name: "Лавлейс",
      username: "ada_l",
      photo_url: "https://t.me/i/userpic/320/a_b-c.jpg",
      auth_date: Math.floor(app.clock.get().getTime() / 1000)
    }
    const check = Object.keys(fields)
      .sort()
      .map((k) => `${k}=${fields[k]}`)
      .join("\n")
    const hash = createHmac("sha256", createHash("sha256").update(TOKEN).digest()).update(check).digest("hex")
    const encoded = Buffer.from(JSON.stringify({ ...fields, hash })).toString("base64url")
    const read = readAuthResult(encoded)
    expect(read).toEqual({
      id: String(chat),
      auth_date: String(fields["auth_date"]),
      hash,
      first_name: "Ада",
      last_name: "Лавлейс",
      username: "ada_l",
      photo_url: "https://t.me/i/userpic/320/a_b-c.jpg"
    })
    const portal = await typedClient(app, { headers: { ...anyAddress(), ...COOKIE } })
    const signedIn = await ok(portal.telegram.telegramSignIn({ payload: read! }))
    expect<number>(signedIn.user.id).toBe(user.id)
    // what the page cannot use: `false` (Telegram refused), junk, fields missing
    for (const junk of [Buffer.from("false").toString("base64url"), "%%%", Buffer.from(JSON.stringify({ id: 1, hash: "00" })).toString("base64url")]) {
      expect(readAuthResult(junk)).toBeUndefined()
    }
  })

  test("the OpenAPI document names the X-Session header on both routes", async () => {
    const doc = (await app.get("/v1/openapi.json")).body
    for (const path of ["/v1/auth/telegram", "/v1/auth/telegram/webapp"]) {
      const parameters = doc.paths[path].post.parameters as ReadonlyArray<{ name: string; in: string }>
      expect(parameters.some((p) => p.name === "X-Session" && p.in === "header")).toBe(true)
    }
    expect(doc.paths["/v1/auth/telegram"].get).toBeDefined()
  })
})
