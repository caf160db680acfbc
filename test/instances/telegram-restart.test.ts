import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startTelegramStandIn } from "../support/telegram-stand-in.ts"
import { adminUrl, call, freePort, freshAddress, freshDatabase, newAppKey, strongPassword, uniqueEmail } from "./harness.ts"

/**
 * [D125] on a real server process: a Telegram notice written while the Bot API is unreachable is
 * still in the outbox when the process is killed (SIGKILL: no shutdown, no drain); the process
 * starts again on the same data, the Bot API (a LOCAL STAND-IN, test/support/telegram-stand-in.ts)
 * is back, and the notice arrives exactly once. On the embedded PostgreSQL (a PGlite data
 * directory) by default; on a fresh database of TEST_DATABASE_URL when it is set.
 */
const TOKEN = "424242424:AAFakeTokenForTheStandIn_0123456789ab"
const SECRET = "restart-test-secret"
const ADMIN = { email: "telegram-admin@example.test", password: strongPassword() }

const dataDir = mkdtempSync(join(tmpdir(), "vpn-telegram-restart-"))
const bot = startTelegramStandIn({ token: TOKEN })
const children: Array<ReturnType<typeof Bun.spawn>> = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL")
  bot.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(100)
  }
  return check()
}

const start = async (port: number, database: Record<string, string>) => {
  const child = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    cwd: join(import.meta.dir, "../.."),
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: process.env["HOME"] ?? "/tmp",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env["TELEGRAM_RESTART_LOG"] ?? "warn",
      TRUST_PROXY: "true",
      GENERAL_RATE_LIMIT: "0",
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_WEBHOOK_SECRET: SECRET,
      TELEGRAM_API_URL: bot.url,
      ...database
    },
    stdout: "ignore",
    stderr: "inherit"
  })
  children.push(child)
  const base = `http://127.0.0.1:${port}`
  expect(
    await waitUntil(async () => {
      try {
        return (await fetch(`${base}/v1/status`)).status === 200
      } catch {
        return false
      }
    }, 60_000)
  ).toBe(true)
  return { child, base }
}

test("a notice written before a SIGKILL is sent exactly once after the restart [D125] [D96]", async () => {
  const database: Record<string, string> =
    adminUrl === undefined ? { DATABASE_URL: "" } : { DATABASE_URL: (await freshDatabase("telegram_restart")).url, APP_KEY: newAppKey() }
  const port = await freePort()
  const first = await start(port, database)

  // a user links a chat
  const password = strongPassword()
  const email = uniqueEmail("tg").toLowerCase()
  const registered = await call(first.base, "POST", "/v1/auth/register", {
    body: { name: "Ada", email, password, password_confirmation: password },
    headers: freshAddress()
  })
  expect(registered.status).toBe(201)
  const token = registered.body.data.token as string
  const link = await call(first.base, "POST", "/v1/account/telegram/link", { token })
  expect(link.status).toBe(201)
  const code = new URL(link.body.data.url as string).searchParams.get("start")
  const chat = 6_100_200_300
  const hook = await call(first.base, "POST", "/v1/webhooks/telegram", {
    headers: { "x-telegram-bot-api-secret-token": SECRET },
    body: {
      update_id: 1,
      message: { message_id: 1, date: 0, text: `/start ${code}`, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "Ada" } }
    }
  })
  expect(hook.status).toBe(200)
  expect(await waitUntil(() => bot.to(chat).length === 1, 10_000)).toBe(true)

  // Telegram unreachable; a staff reply writes the notice (its first try fails: nothing was sent)
  bot.stop()
  const admin = await call(first.base, "POST", "/v1/auth/login", { body: ADMIN, headers: freshAddress() })
  expect(admin.status).toBe(200)
  const ticket = await call(first.base, "POST", "/v1/tickets", { token, body: { subject: "Restart", message: "Hi" } })
  const reply = await call(first.base, "POST", `/v1/admin/tickets/${ticket.body.data.id}/reply`, {
    token: admin.body.data.token,
    body: { message: "Written before the kill" }
  })
  expect(reply.status).toBe(201)
  const pendingTelegram = async (base: string) => {
    const list = await call(base, "GET", "/v1/admin/outbox?status=pending", { token: admin.body.data.token })
    return (list.body.data as Array<{ channel: string; kind: string; attempts: number; next_attempt_at: string }>).filter((m) => m.channel === "telegram")
  }
  expect(await waitUntil(async () => (await pendingTelegram(first.base)).some((m) => m.kind === "ticket-reply" && m.attempts >= 1), 10_000)).toBe(true)
  // killed once its retry is due (10 s after the failure), so that the new process's first jobs run
  // (5 s after its start) has it to send; the old one's next run is a minute away
  const [waiting] = await pendingTelegram(first.base)
  await Bun.sleep(Math.max(0, Date.parse(waiting!.next_attempt_at) - Date.now() + 200))

  first.child.kill("SIGKILL")
  await first.child.exited
  bot.restart()

  // the same data, a new process: its jobs (5 s after start) send what is due (the retry is 10 s after the failure)
  const second = await start(port, database)
  const arrived = await waitUntil(() => bot.to(chat).length >= 2, 40_000)
  if (!arrived) {
    const all = await call(second.base, "GET", "/v1/admin/outbox", { token: admin.body.data.token })
    console.error("outbox after the restart:", JSON.stringify(all.body.data, null, 1))
  }
  expect(arrived).toBe(true)
  await Bun.sleep(3_000)
  const notices = bot.to(chat).filter((m) => m.text.includes("Written before the kill"))
  expect(notices).toHaveLength(1)
  const sent = await call(second.base, "GET", "/v1/admin/outbox?status=sent", { token: admin.body.data.token })
  expect((sent.body.data as Array<{ channel: string; kind: string }>).filter((m) => m.channel === "telegram" && m.kind === "ticket-reply")).toHaveLength(1)
  expect(await pendingTelegram(second.base)).toEqual([])
  second.child.kill("SIGTERM")
  await second.child.exited
}, 150_000)
