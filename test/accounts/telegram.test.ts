import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createHash, createHmac } from "node:crypto"
import { Option, Redacted } from "effect"
import { Secret, TOTP } from "otpauth"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { startTelegramStandIn, type TelegramStandIn } from "../support/telegram-stand-in.ts"
import { anyAddress, register } from "./helpers.ts"

// [D125] Telegram through the HTTP API, against a LOCAL STAND-IN of the Bot API
// (test/support/telegram-stand-in.ts): linking by a one-time t.me link and the webhook, unlinking,
// notices in the linked chat through the outbox (429, 403, the global pace), sign-in with the
// Login Widget and a Mini App's initData. Every hash here is computed by the test itself with
// node:crypto, as Telegram documents it, or was computed beforehand with Python's hmac.
setDefaultTimeout(30_000)

/** the bot token of Telegram's own documentation example; the vectors below were made with it */
const TOKEN = "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
const SECRET = "webhook-secret_for-tests"

let app: TestApp
let bot: TelegramStandIn
let admin: Awaited<ReturnType<TestApp["createUser"]>>

beforeAll(async () => {
  bot = startTelegramStandIn({ token: TOKEN })
  app = await makeTestApp({
    config: {
      telegram: Option.some({ botToken: Redacted.make(TOKEN), webhookSecret: Redacted.make(SECRET), apiUrl: Option.some(bot.url) })
    }
  })
  admin = await app.createUser({ role: "admin" })
})
afterAll(async () => {
  await app.dispose()
  bot.stop()
})

type User = Awaited<ReturnType<typeof register>>

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(20)
  }
  return check()
}

let updateId = 1000
let chatIds = 5_000_000_000
const newChat = () => ++chatIds

/** a Bot API update carrying a private-chat message from `chatId` */
const update = (chatId: number, text: string, options: { username?: string; type?: string; language_code?: string } = {}) => ({
  update_id: ++updateId,
  message: {
    message_id: updateId,
    date: Math.floor(app.clock.get().getTime() / 1000),
    text,
    chat: { id: chatId, type: options.type ?? "private", first_name: "Ada" },
    from: {
      id: chatId,
      is_bot: false,
      first_name: "Ada",
      language_code: options.language_code ?? "en",
      ...(options.username ? { username: options.username } : {})
    }
  }
})

/** `secret: null`: no header at all */
const webhook = (body: unknown, secret: string | null = SECRET) =>
  app.post("/v1/webhooks/telegram", { body, headers: secret === null ? {} : { "x-telegram-bot-api-secret-token": secret } })

/** the typed client of one token */
const as = (token: string, target: TestApp = app) => typedClient(target, { token })

/** a one-time link (a 201: the typed client decodes the declared status only) and its code */
const createLink = async (user: { token: string }) => {
  const me = await as(user.token)
  const link = await ok(me.telegram.createTelegramLink())
  return { link, code: new URL(link.url).searchParams.get("start")! }
}

/** links `chatId` to the user the way a person does it: the link, then /start in the chat */
const linkChat = async (user: { token: string }, chatId: number, username = "ada_l") => {
  const { code } = await createLink(user)
  const before = bot.to(chatId).length
  const hook = await webhook(update(chatId, `/start ${code}`, { username }))
  expect(hook.status).toBe(200)
  expect(await waitUntil(() => bot.to(chatId).length > before)).toBe(true)
  return code
}

const status = async (user: { token: string }) => {
  const me = await as(user.token)
  return ok(me.telegram.telegramStatus())
}

/** the caller's settings, through the typed client */
const settingsOf = async (user: { token: string }) => {
  const me = await as(user.token)
  return ok(me.accounts.settings())
}

const tickets = new Map<string, number>()
let staff: TypedClient | undefined
/** the user's ticket (one each) and a staff reply to it: the ticket-reply notice of [D96] */
const staffReply = async (user: { token: string }, message: string) => {
  let id = tickets.get(user.token)
  if (id === undefined) {
    const me = await as(user.token)
    id = (await ok(me.support.createTicket({ payload: { subject: "Help", message: "Hi" } }))).id
    tickets.set(user.token, id)
  }
  // a 201 each: the typed client decodes the declared status only
  staff ??= await as(admin.token)
  await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message } }))
  return id
}

// ---- the Login Widget's and the Mini App's hashes, computed here as Telegram documents them ----

const widgetHash = (fields: Record<string, string | number>) => {
  const check = Object.keys(fields)
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join("\n")
  return createHmac("sha256", createHash("sha256").update(TOKEN).digest()).update(check).digest("hex")
}

/** the widget's fields for a Telegram account, signed now (by the app clock) */
const widget = (id: number, extra: Record<string, string | number> = {}) => {
  const fields: Record<string, string | number> = {
    id,
    first_name: "Ada",
    username: "ada_l",
    photo_url: "https://t.me/i/userpic/320/ada.jpg",
    auth_date: Math.floor(app.clock.get().getTime() / 1000),
    ...extra
  }
  return { ...fields, hash: widgetHash(fields) }
}

const initData = (userId: number, authDate = Math.floor(app.clock.get().getTime() / 1000), extra: Record<string, string> = {}) => {
  const pairs: Record<string, string> = {
    query_id: `AAH${userId}`,
    user: JSON.stringify({ id: userId, first_name: "Ada", username: "ada_l", language_code: "en" }),
    auth_date: String(authDate),
    ...extra
  }
  const check = Object.keys(pairs)
    .sort()
    .map((k) => `${k}=${pairs[k]}`)
    .join("\n")
  const secret = createHmac("sha256", "WebAppData").update(TOKEN).digest()
  const hash = createHmac("sha256", secret).update(check).digest("hex")
  return new URLSearchParams({ ...pairs, hash }).toString()
}

const signIn = (body: unknown) => app.post("/v1/auth/telegram", { headers: anyAddress(), body })
const signInWebApp = (body: unknown) => app.post("/v1/auth/telegram/webapp", { headers: anyAddress(), body })
/** a Mini App sign-in through the typed client (a 200), from an address of its own */
const webAppSignIn = async (init_data: string) => {
  const anonymous = await typedClient(app, { headers: anyAddress() })
  return ok(anonymous.telegram.telegramWebAppSignIn({ payload: { init_data } }))
}

describe("linking [D125]", () => {
  test("POST /v1/account/telegram/link: 201 {url, expires_at}, a one-time t.me link of the bot for 10 minutes", async () => {
    const user = await register(app)
    const res = await app.post("/v1/account/telegram/link", { token: user.token })
    expect(res.status).toBe(201)
    const code = new URL(res.body.data.url as string).searchParams.get("start")!
    expect(Object.keys(res.body.data).sort()).toEqual(["expires_at", "url"])
    expect(res.body.data.url).toBe(`https://t.me/${bot.username}?start=${code}`)
    expect(code).toMatch(/^[A-Za-z0-9_-]{16,64}$/)
    expect(res.body.data.expires_at).toBe(new Date(app.clock.get().getTime() + 10 * 60_000).toISOString())
    // only its hash is stored
    const rows = await app.sql<{ code_hash: string }>`select code_hash from telegram_link_codes where user_id = ${user.id}`
    expect(rows.map((r) => r.code_hash)).toEqual([createHash("sha256").update(code).digest("hex")])
    // the bot's username comes from getMe, asked once
    await createLink(user)
    expect(bot.calls.filter((c) => c.method === "getMe")).toHaveLength(1)
    expect((await app.post("/v1/account/telegram/link", {})).status).toBe(401)
  })

  test("/start <code> links the chat, the bot says so in the chat; GET /v1/account/telegram shows it", async () => {
    const user = await register(app)
    expect(await status(user)).toEqual({ linked: false, username: null, linked_at: null })
    const chat = newChat()
    const { code } = await createLink(user)
    const start = update(chat, `/start ${code}`, { username: "ada_l" })
    const hook = await webhook(start)
    expect(hook.status).toBe(200)
    expect(hook.body).toEqual({ success: true, data: { update_id: updateId, handled: true } })
    expect(await status(user)).toEqual({ linked: true, username: "ada_l", linked_at: app.clock.get() })
    expect(await waitUntil(() => bot.to(chat).length === 1)).toBe(true)
    expect(bot.to(chat)[0]!.text).toContain(user.email)
    expect(bot.to(chat)[0]!.text).toContain("linked")
    // the same update delivered again (Telegram retries until it gets a 200) answers nothing twice
    const again = await webhook(start)
    expect(again.status).toBe(200)
    await Bun.sleep(200)
    expect(bot.to(chat)).toHaveLength(1)
  })

  test("without X-Telegram-Bot-Api-Secret-Token, or with a wrong one: 401, nothing changes", async () => {
    const user = await register(app)
    const chat = newChat()
    const { code } = await createLink(user)
    for (const secret of [null, "wrong-secret", `${SECRET}x`, SECRET.slice(0, -1), ""]) {
      const res = await webhook(update(chat, `/start ${code}`), secret)
      expect(res.status).toBe(401)
      expect(res.body.success).toBe(false)
    }
    await Bun.sleep(100)
    expect(await status(user)).toEqual({ linked: false, username: null, linked_at: null })
    expect(bot.to(chat)).toHaveLength(0)
    // the code was not used up: the right secret links with it
    expect((await webhook(update(chat, `/start ${code}`))).status).toBe(200)
    expect((await status(user)).linked).toBe(true)
  })

  test("the code works once, and only for 10 minutes", async () => {
    const user = await register(app)
    const chat = newChat()
    const code = await linkChat(user, chat)
    // used: another chat cannot take it
    const other = newChat()
    expect((await webhook(update(other, `/start ${code}`))).status).toBe(200)
    expect(await waitUntil(() => bot.to(other).length === 1)).toBe(true)
    expect(bot.to(other)[0]!.text).toContain("invalid or has expired")
    const [row] = await app.sql<{ telegram_id: string }>`select telegram_id from telegram_links where user_id = ${user.id}`
    expect(row!.telegram_id).toBe(String(chat))

    const late = await register(app)
    const { code: lateCode } = await createLink(late)
    app.clock.advance(10 * 60_000)
    const lateChat = newChat()
    expect((await webhook(update(lateChat, `/start ${lateCode}`))).status).toBe(200)
    expect(await waitUntil(() => bot.to(lateChat).length === 1)).toBe(true)
    expect(bot.to(lateChat)[0]!.text).toContain("invalid or has expired")
    expect((await status(late)).linked).toBe(false)
  })

  test("a chat linked to another user stays with that user; the bot says so", async () => {
    const first = await register(app)
    const second = await register(app)
    const chat = newChat()
    await linkChat(first, chat)
    const { code } = await createLink(second)
    expect((await webhook(update(chat, `/start ${code}`))).status).toBe(200)
    expect(await waitUntil(() => bot.to(chat).length === 2)).toBe(true)
    expect(bot.to(chat)[1]!.text).toContain("already linked to another account")
    expect((await status(first)).linked).toBe(true)
    expect((await status(second)).linked).toBe(false)
    // the second user's code was not spent: it links another chat
    const own = newChat()
    expect((await webhook(update(own, `/start ${code}`))).status).toBe(200)
    expect((await status(second)).linked).toBe(true)
  })

  test("one chat per user: linking from a new chat replaces the old one; the database refuses two of either", async () => {
    const user = await register(app)
    const oldChat = newChat()
    const newOne = newChat()
    await linkChat(user, oldChat, "old_name")
    await linkChat(user, newOne, "new_name")
    expect((await status(user)).username).toBe("new_name")
    const rows = await app.sql<{ telegram_id: string }>`select telegram_id from telegram_links where user_id = ${user.id}`
    expect(rows.map((r) => r.telegram_id)).toEqual([String(newOne)])
    const other = await register(app)
    // one user per chat, one chat per user: constraints, not only code
    await expect(app.sql`insert into telegram_links (user_id, telegram_id, linked_at) values (${other.id}, ${String(newOne)}, now())`).rejects.toThrow()
    await expect(app.sql`insert into telegram_links (user_id, telegram_id, linked_at) values (${user.id}, ${String(newChat())}, now())`).rejects.toThrow()
  })

  test("/start in a group, /start without a code, other messages: answered or ignored, never linked", async () => {
    const user = await register(app)
    const { code } = await createLink(user)
    const group = -1001234567890
    expect((await webhook(update(group, `/start ${code}`, { type: "supergroup" }))).body.data.handled).toBe(true)
    const chat = newChat()
    expect((await webhook(update(chat, "/start"))).body.data.handled).toBe(true)
    expect((await webhook(update(chat, "hello"))).body.data).toEqual({ update_id: updateId, handled: false })
    expect((await webhook({ update_id: ++updateId, edited_message: {} })).body.data).toEqual({ update_id: updateId, handled: false })
    expect((await status(user)).linked).toBe(false)
    expect(await waitUntil(() => bot.to(chat).length === 1 && bot.to(group).length === 1)).toBe(true)
    expect(bot.to(chat)[0]!.text).toContain("account settings")
    const bad = await app.post("/v1/webhooks/telegram", { raw: "{not json", headers: { "x-telegram-bot-api-secret-token": SECRET } })
    expect(bad.status).toBe(422)
  })

  test("DELETE /v1/account/telegram unlinks: no notice goes there, its Telegram account no longer signs in", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const res = await app.del("/v1/account/telegram", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "Telegram unlinked.", data: {} })
    expect(await status(user)).toEqual({ linked: false, username: null, linked_at: null })
    const me = await as(user.token)
    expect(await ok(me.telegram.unlinkTelegram())).toBe("Telegram unlinked.")
    await staffReply(user, "After unlinking")
    await Bun.sleep(300)
    expect(bot.to(chat)).toHaveLength(1)
    const login = await signIn(widget(chat))
    expect(login.status).toBe(401)
    expect(login.body.message).toBe("Telegram account not linked.")
  })
})

describe("notices in the linked chat [D125] [D96]", () => {
  test("telegram_notifications: false before linking, true once linked; PUT changes it; 422 for a non-boolean", async () => {
    const user = await register(app)
    expect(await settingsOf(user)).toEqual({ email_notifications: true, telegram_notifications: false })
    await linkChat(user, newChat())
    expect(await settingsOf(user)).toEqual({ email_notifications: true, telegram_notifications: true })
    const me = await as(user.token)
    const put = await ok(me.accounts.updateSettings({ payload: { telegram_notifications: false } }))
    expect(put).toEqual({ message: "Settings updated.", data: { email_notifications: true, telegram_notifications: false } })
    const bad = await app.put("/v1/account/settings", { token: user.token, body: { telegram_notifications: "yes" } })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.telegram_notifications).toEqual(["The telegram notifications field must be true or false."])
    const empty = await app.put("/v1/account/settings", { token: user.token, body: {} })
    expect(empty.status).toBe(422)
  })

  test("a staff reply goes to the chat as well as by mail, written in the outbox with it, sent once", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const ticket = await staffReply(user, "Turn on the kill switch.")
    expect(await waitUntil(() => bot.to(chat).length === 2)).toBe(true)
    const notice = bot.to(chat)[1]!.text
    expect(notice).toContain(`#${ticket}`)
    expect(notice).toContain("Turn on the kill switch.")
    expect(app.outbox.filter((m) => m.to === user.email && m.subject.includes(`#${ticket}`))).toHaveLength(1)
    const rows = () => app.sql<{ status: string; recipient: string }>`
      select status, recipient from outbox where channel = 'telegram' and kind = 'ticket-reply' and recipient = ${String(chat)}`
    // marked right after Telegram's answer
    expect(await waitUntil(async () => (await rows())[0]?.status === "sent")).toBe(true)
    expect(await rows()).toEqual([{ status: "sent", recipient: String(chat) }])
    // the jobs' sender finds nothing left to send again
    await app.run(runJobsOnce)
    await Bun.sleep(200)
    expect(bot.to(chat)).toHaveLength(2)
  })

  test("[D120] in the user's language: the bot's answer once it knows the user, and the notices; before, the chat's", async () => {
    const user = await register(app)
    const me = await as(user.token)
    expect((await ok(me.accounts.updateProfile({ payload: { locale: "ru" } }))).message).toBe("Profile updated.")
    const chat = newChat()
    // the chat's Telegram language is English, the user's Russian: the user's wins
    await linkChat(user, chat)
    expect(bot.to(chat)[0]!.text).toBe(
      `Готово: этот чат привязан к вашей учётной записи ${user.email}. Уведомления о вашей услуге VPN будут приходить сюда. Отключить их или отвязать чат можно в настройках учётной записи.`
    )
    const ticket = await staffReply(user, "Включите kill switch.")
    expect(await waitUntil(() => bot.to(chat).length === 2)).toBe(true)
    expect(bot.to(chat)[1]!.text).toBe(`Поддержка ответила на ваше обращение #${ticket} «Help»:\n\nВключите kill switch.\n\n${app.config.appUrl}`)
    // the mail of the same notice too
    expect(await waitUntil(() => app.outbox.some((m) => m.to === user.email && m.subject === `Re: [Обращение #${ticket}] Help`))).toBe(true)

    // a chat nobody linked yet: its own Telegram language (Persian, right to left), else English
    const stranger = newChat()
    expect((await webhook(update(stranger, "/start", { language_code: "fa" }))).status).toBe(200)
    expect(await waitUntil(() => bot.to(stranger).length === 1)).toBe(true)
    expect(bot.to(stranger)[0]!.text).toBe(
      `\u200fسلام! برای دریافت اعلان‌های سرویس VPN در اینجا، در تنظیمات حساب خود «اتصال تلگرام» را باز کنید: ${app.config.appUrl}`
    )
    const other = newChat()
    expect((await webhook(update(other, "/start", { language_code: "de" }))).status).toBe(200)
    expect(await waitUntil(() => bot.to(other).length === 1)).toBe(true)
    expect(bot.to(other)[0]!.text).toStartWith("Hello! To get notices about your VPN service here")
  })

  test("telegram_notifications off: mail only; email_notifications off: Telegram only", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const me = await as(user.token)
    await ok(me.accounts.updateSettings({ payload: { telegram_notifications: false } }))
    await staffReply(user, "Mail only")
    await Bun.sleep(300)
    expect(bot.to(chat)).toHaveLength(1)
    await ok(me.accounts.updateSettings({ payload: { telegram_notifications: true, email_notifications: false } }))
    const mailsBefore = app.outbox.filter((m) => m.to === user.email).length
    await staffReply(user, "Telegram only")
    expect(await waitUntil(() => bot.to(chat).length === 2)).toBe(true)
    expect(bot.to(chat)[1]!.text).toContain("Telegram only")
    expect(app.outbox.filter((m) => m.to === user.email)).toHaveLength(mailsBefore)
  })

  test("Telegram down: the notice waits in the outbox and is sent once when it is back", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    bot.stop()
    try {
      await staffReply(user, "While Telegram was down")
      expect(
        await waitUntil(async () => {
          const [row] = await app.sql<{
            attempts: number
          }>`select attempts from outbox where channel = 'telegram' and recipient = ${String(chat)} and kind = 'ticket-reply'`
          return row !== undefined && row.attempts >= 1
        })
      ).toBe(true)
    } finally {
      bot.restart()
    }
    app.clock.advance(11_000)
    await app.run(runJobsOnce)
    expect(await waitUntil(() => bot.to(chat).length === 2)).toBe(true)
    await app.run(runJobsOnce)
    await Bun.sleep(200)
    expect(bot.to(chat).filter((m) => m.text.includes("While Telegram was down"))).toHaveLength(1)
  })

  test("429 with retry_after: the next try waits that long, then the notice is sent once", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    bot.controls.rateLimit = { times: 1, retryAfter: 2 }
    await staffReply(user, "Rate limited")
    expect(
      await waitUntil(async () => {
        const [row] = await app.sql<{ last_error: string | null }>`
        select last_error from outbox where channel = 'telegram' and recipient = ${String(chat)} and kind = 'ticket-reply'`
        return row?.last_error?.includes("429") === true
      })
    ).toBe(true)
    const limitedAt = bot.calls.find((c) => c.status === 429)!.at
    // the row is due 2 s later by the application's clock; the wall clock's 2 s are Telegram's
    app.clock.advance(2_000)
    // the sender wakes itself after retry_after; on a loaded machine the jobs' run (every minute in
    // production) is what finds it, so the test runs them once too, after the wait. A pass that met
    // the pause before it ended deferred the row by the application's clock, which only the test
    // moves: it is moved past that too (in production both clocks run)
    if (!(await waitUntil(() => bot.to(chat).length === 2, 3000))) {
      app.clock.advance(5_000)
      await app.run(runJobsOnce)
    }
    expect(await waitUntil(() => bot.to(chat).length === 2, 8000)).toBe(true)
    expect(bot.to(chat)[1]!.at - limitedAt).toBeGreaterThanOrEqual(2000)
    await Bun.sleep(200)
    expect(bot.to(chat).filter((m) => m.text.includes("Rate limited"))).toHaveLength(1)
  })

  test("403 (the user blocked the bot): the chat is unlinked and the message given up", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    bot.controls.blocked.add(String(chat))
    await staffReply(user, "Blocked")
    expect(await waitUntil(async () => !(await status(user)).linked)).toBe(true)
    const given = () => app.sql<{ status: string; last_error: string }>`
      select status, last_error from outbox where channel = 'telegram' and recipient = ${String(chat)} and kind = 'ticket-reply'`
    // recorded right after the chat is unlinked
    expect(await waitUntil(async () => (await given())[0]?.status === "failed")).toBe(true)
    const [row] = await given()
    expect(row!.last_error).toContain("403")
    expect((await settingsOf(user)).telegram_notifications).toBe(false)
    // nothing more is written for that chat
    await staffReply(user, "After the block")
    await Bun.sleep(200)
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from outbox where channel = 'telegram' and recipient = ${String(chat)}`
    expect(count!.n).toBe(2)
  })

  test("at most 25 messages a second in all: 60 notices due at once are paced", async () => {
    const users: Array<User> = []
    const chats: Array<number> = []
    for (let i = 0; i < 3; i++) {
      const user = await register(app)
      const chat = newChat()
      await linkChat(user, chat)
      users.push(user)
      chats.push(chat)
    }
    // written while Telegram is unreachable, so that all 60 are due at the same moment after
    bot.stop()
    try {
      for (let i = 0; i < 20; i++) await Promise.all(users.map((u) => staffReply(u, `Burst ${i}`)))
    } finally {
      bot.restart()
    }
    const burstStart = bot.sent.length
    app.clock.advance(20_000)
    await app.run(runJobsOnce)
    expect(await waitUntil(() => bot.sent.length - burstStart >= 60, 15_000)).toBe(true)
    const burst = bot.sent.slice(burstStart).filter((m) => m.text.includes("Burst"))
    expect(burst).toHaveLength(60)
    const times = burst.map((m) => m.at).sort((a, b) => a - b)
    let most = 0
    for (let i = 0; i < times.length; i++) {
      let j = i
      while (j < times.length && times[j]! - times[i]! < 1000) j++
      most = Math.max(most, j - i)
    }
    expect(most).toBeLessThanOrEqual(25)
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(2000)
    // each once
    expect(new Set(burst.map((m) => `${m.chat_id}:${m.text}`)).size).toBe(60)
  }, 60_000)

  test("/metrics counts the Telegram channel's deliveries on their own", async () => {
    const res = await app.get("/metrics", { headers: { "x-forwarded-for": "127.0.0.1" } })
    expect(res.status).toBe(200)
    const family = parsePrometheusTextFormat(res.text).find((f) => f.name === "vpn_api_outbox_deliveries_total")!
    const telegram = family.metrics.filter((m) => m.labels?.["channel"] === "telegram")
    expect(telegram.some((m) => m.labels?.["outcome"] === "sent" && Number(m.value) > 0)).toBe(true)
    expect(telegram.some((m) => m.labels?.["outcome"] === "given_up" && Number(m.value) > 0)).toBe(true)
    expect(family.metrics.some((m) => m.labels?.["channel"] === "mail")).toBe(true)
  })
})

describe("sign-in with the Login Widget [D125]", () => {
  test("a vector computed beforehand (Python's hmac) signs in its linked user, like login", async () => {
    // token of Telegram's docs; fields and hash made outside this code base:
    // hmac.new(sha256(token).digest(), "auth_date=1768478400\nfirst_name=Ada\nid=987654321\n
    //   photo_url=https://t.me/i/userpic/320/ada.jpg\nusername=ada_l", sha256).hexdigest()
    const vector = {
      id: 987654321,
      first_name: "Ada",
      username: "ada_l",
      photo_url: "https://t.me/i/userpic/320/ada.jpg",
      auth_date: 1768478400,
      hash: "053f09629f858ee785020f0769526401f7cebb0773177373458ea1100894f971"
    }
    app.clock.set(new Date(1768478400_000 + 30_000))
    const user = await register(app)
    await linkChat(user, 987654321)
    const res = await signIn(vector)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: { token: expect.any(String), user: { id: user.id, name: "Ada Lovelace", email: user.email, status: 1 } }
    })
    expect(res.headers.get("cache-control")).toBe("no-store")
    const signedIn = await as(res.body.data.token)
    expect<number>((await ok(signedIn.accounts.user())).id).toBe(user.id)
    // the same fields again: a replay
    const replay = await signIn(vector)
    expect(replay.status).toBe(401)
    expect(replay.body).toEqual({ success: false, message: "Invalid Telegram login." })
    // one character of the hash changed
    const forged = await signIn({ ...vector, hash: `${vector.hash.slice(0, -1)}0` })
    expect(forged.status).toBe(401)
    expect(forged.body.message).toBe("Invalid Telegram login.")
  })

  test("a field changed after signing, or a field added, breaks the hash: 401", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const signed = widget(chat)
    for (const tampered of [
      { ...signed, username: "mallory" },
      { ...signed, last_name: "Byron" },
      { ...signed, id: chat + 1 }
    ]) {
      const res = await signIn(tampered)
      expect(res.status).toBe(401)
      expect(res.body.message).toBe("Invalid Telegram login.")
    }
    // the id as text is the same signed value
    expect((await signIn({ ...signed, id: String(chat) })).status).toBe(200)
  })

  test("auth_date 10 minutes old or more is stale: 401; just under is fine", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const old = widget(chat)
    app.clock.advance(10 * 60_000)
    const stale = await signIn(old)
    expect(stale.status).toBe(401)
    expect(stale.body.message).toBe("Invalid Telegram login.")
    const recent = widget(chat)
    app.clock.advance(10 * 60_000 - 1_000)
    expect((await signIn(recent)).status).toBe(200)
  })

  test("an account nobody linked: 401 Telegram account not linked.", async () => {
    const res = await signIn(widget(newChat()))
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Telegram account not linked." })
  })

  test("otp is never part of the signed string; a user with two-factor on needs it, with login's messages", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    // no second factor: an otp beside the fields changes nothing
    expect((await signIn({ ...widget(chat), otp: "123456" })).status).toBe(200)

    app.clock.advance(61_000)
    const setup = await app.post("/v1/account/2fa", { token: user.token })
    const secret = setup.body.data.secret as string
    const code = (offset = 0) => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(secret), timestamp: app.clock.get().getTime() + offset })
    expect((await app.post("/v1/account/2fa/confirm", { token: user.token, body: { code: code() } })).status).toBe(200)
    app.clock.advance(61_000)

    const signed = widget(chat)
    const missing = await signIn(signed)
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({ otp: ["The otp field is required."] })
    const wrong = await signIn({ ...signed, otp: code() === "000000" ? "000001" : "000000" })
    expect(wrong.status).toBe(422)
    expect(wrong.body.errors).toEqual({ otp: ["The two-factor code is invalid."] })
    // the same data set, now with a right code: the failures above did not use it up
    const right = await signIn({ ...signed, otp: code() })
    expect(right.status).toBe(200)
    expect((await signIn({ ...signed, otp: code(30_000) })).status).toBe(401)
  })

  test("the same fields sent twice at once sign in once", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const signed = widget(chat)
    const answers = await Promise.all([signIn(signed), signIn(signed), signIn(signed)])
    expect(answers.map((r) => r.status).sort()).toEqual([200, 401, 401])
  })

  test("missing fields are 422 in the envelope, never a 5xx", async () => {
    const res = await signIn({ first_name: "Ada" })
    expect(res.status).toBe(422)
    expect(Object.keys(res.body.errors).sort()).toEqual(["auth_date", "hash", "id"])
    const bad = await signIn({ id: "abc", auth_date: -1, hash: "x" })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.id).toEqual(["The id field must be an integer."])
  })
})

describe("sign-in with a Mini App's initData [D125]", () => {
  test("a vector computed beforehand (Python's hmac, WebAppData key) signs in", async () => {
    const vector =
      "query_id=AAHdF6IQAAAAAN0XohDhr8c&user=%7B%22id%22%3A987654321%2C%22first_name%22%3A%22Ada%22%2C%22username%22%3A%22ada_l%22%2C%22language_code%22%3A%22en%22%7D&auth_date=1768478400&hash=63f7268b7dd6a4df0a775e71db7becda1124c8204c3d82f7d8915f671e312852"
    app.clock.set(new Date(1768478400_000 + 60_000))
    // 987654321 was linked above (the widget's vector), possibly to an earlier test user: link it anew
    const user = await register(app)
    await app.sql`delete from telegram_links where telegram_id = '987654321'`
    await linkChat(user, 987654321)
    const signedIn = await webAppSignIn(vector)
    expect<unknown>(signedIn.user).toEqual({ id: user.id, name: "Ada Lovelace", email: user.email, status: 1 })
    const replay = await signInWebApp({ init_data: vector })
    expect(replay.status).toBe(401)
    expect(replay.body.message).toBe("Invalid Telegram login.")
  })

  test("tampered, stale, unlinked, malformed", async () => {
    const user = await register(app)
    const chat = newChat()
    await linkChat(user, chat)
    const good = initData(chat)
    const tampered = good.replace("ada_l", "mallory")
    expect((await signInWebApp({ init_data: tampered })).body.message).toBe("Invalid Telegram login.")
    // the Login Widget's key does not sign initData, and the other way round
    const widgetKeyed = (() => {
      const pairs = Object.fromEntries(new URLSearchParams(good))
      delete pairs["hash"]
      return new URLSearchParams({ ...pairs, hash: widgetHash(pairs) }).toString()
    })()
    expect((await signInWebApp({ init_data: widgetKeyed })).status).toBe(401)
    const stale = initData(chat, Math.floor(app.clock.get().getTime() / 1000) - 600)
    expect((await signInWebApp({ init_data: stale })).body.message).toBe("Invalid Telegram login.")
    const unlinked = await signInWebApp({ init_data: initData(newChat()) })
    expect(unlinked.status).toBe(401)
    expect(unlinked.body.message).toBe("Telegram account not linked.")
    for (const junk of ["", "hash=", "a=1&a=2&hash=00", "%%%"]) {
      const res = await signInWebApp({ init_data: junk })
      expect([401, 422]).toContain(res.status)
    }
    expect((await signInWebApp({})).body.errors.init_data).toEqual(["The init data field is required."])
    // a signed extra field (Telegram adds some) is part of the string
    expect<number>((await webAppSignIn(initData(chat, undefined, { signature: "abc", chat_type: "sender" }))).user.id).toBe(user.id)
    expect<number>((await webAppSignIn(good)).user.id).toBe(user.id)
  })
})

describe("Telegram not configured [D125]", () => {
  test("its routes are 404; the settings still answer", async () => {
    const plain = await makeTestApp({ reset: false })
    try {
      const user = await plain.createUser()
      expect((await plain.post("/v1/account/telegram/link", { token: user.token })).status).toBe(404)
      expect((await plain.post("/v1/webhooks/telegram", { body: {}, headers: { "x-telegram-bot-api-secret-token": SECRET } })).status).toBe(404)
      expect((await plain.post("/v1/auth/telegram", { headers: anyAddress(), body: { id: 1, auth_date: 1, hash: "00" } })).status).toBe(404)
      const me = await as(user.token, plain)
      expect(await ok(me.telegram.telegramStatus())).toEqual({ linked: false, username: null, linked_at: null })
    } finally {
      await plain.dispose()
    }
  })
})
