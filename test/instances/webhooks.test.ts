import { afterAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import {
  announceSkip,
  call,
  connectSql,
  freePort,
  freshAddress,
  freshDatabase,
  newAppKey,
  type RunningServer,
  skipReason,
  startServer,
  strongPassword,
  uniqueEmail
} from "./harness.ts"

/**
 * [D101] on real server processes and a real PostgreSQL: a receiver that fails its first three
 * requests gets each event once, in order, validly signed, although the server is restarted while
 * deliveries wait for their retry.
 */
announceSkip("webhooks")

interface Received {
  readonly signature: string
  readonly raw: string
  readonly body: { id: string; type: string; data: Record<string, unknown> }
}

/** a receiver on a fixed port that answers 500 to its first `failures` requests */
const flakyReceiver = (port: number, failures: number) => {
  const received: Array<Received> = []
  let calls = 0
  const server = Bun.serve({
    port,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      calls += 1
      const raw = await req.text()
      if (calls <= failures) return new Response("down", { status: 503 })
      received.push({ signature: req.headers.get("x-signature") ?? "", raw, body: JSON.parse(raw) })
      return new Response("ok")
    }
  })
  return { received, calls: () => calls, stop: () => server.stop(true) }
}

const validSignature = (secret: string, header: string, raw: string) => {
  const parts = new Map(header.split(",").map((p) => p.split("=", 2) as [string, string]))
  const t = parts.get("t")
  return t !== undefined && createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex") === parts.get("v1")
}

const waitUntil = async (check: () => Promise<boolean> | boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(250)
  }
  return false
}

const running: Array<RunningServer> = []
const stops: Array<() => void> = []
afterAll(async () => {
  for (const s of running) await s.stop(3000).catch(() => {})
  for (const stop of stops) stop()
})

describe.skipIf(skipReason !== undefined)("webhooks on real processes [D101]", () => {
  test("fails three times, restart in between: each delivery arrives once, in order, signed", async () => {
    const port = await freePort()
    const sink = flakyReceiver(port, 3)
    stops.push(sink.stop)
    const db = await freshDatabase("webhooks_restart")
    const appKey = newAppKey()
    const env = { WEBHOOKS_ALLOW_PRIVATE: "true", LOG_LEVEL: "warn" }
    const first = await startServer({ databaseUrl: db.url, appKey, env })
    running.push(first)
    const sql = await connectSql(db.url)
    try {
      const password = strongPassword()
      const admin = await call(first.base, "POST", "/v1/auth/register", {
        body: { name: "Hook admin", email: uniqueEmail("hookadmin").toLowerCase(), password, password_confirmation: password },
        headers: freshAddress(),
        timeoutMs: 30_000
      })
      expect(admin.status).toBe(201)
      await sql.query("update users set role = 'admin' where id = $1", [admin.body.data.user.id])
      const hook = await call(first.base, "POST", "/v1/admin/webhooks", {
        token: admin.body.data.token,
        body: { url: `http://127.0.0.1:${port}/hook`, events: ["user.registered"] }
      })
      expect(hook.status).toBe(201)
      const secret = hook.body.data.secret as string

      const emails = [0, 1, 2].map((i) => uniqueEmail(`hooked${i}`).toLowerCase())
      for (const email of emails) {
        const res = await call(first.base, "POST", "/v1/auth/register", {
          body: { name: "Hooked", email, password, password_confirmation: password },
          headers: freshAddress(),
          timeoutMs: 30_000
        })
        expect(res.status).toBe(201)
      }
      // the first delivery was tried after its commit and failed; the others wait behind it
      expect(await waitUntil(() => sink.calls() >= 1, 20_000)).toBe(true)
      await first.stop()
      const { rows: waiting } = await sql.query<{ n: number }>(`select count(*)::int as n from outbox where channel = 'webhook' and status = 'pending'`)
      expect(waiting[0]!.n).toBe(3)

      // the restarted process's jobs (5 s after start, then every 60 s) retry with backoff (10 s,
      // 20 s, 40 s): once the first retry is due, the second process's first run makes it, so the
      // deliveries arrive at its third run (~125 s) and not a run later
      await Bun.sleep(12_000)
      const second = await startServer({ databaseUrl: db.url, appKey, env })
      running.push(second)
      expect(await waitUntil(() => sink.received.length >= 3, 250_000)).toBe(true)
      await Bun.sleep(2000)
      expect(sink.received.map((r) => r.body.data["email"])).toEqual(emails)
      expect(new Set(sink.received.map((r) => r.body.id)).size).toBe(3)
      for (const r of sink.received) {
        expect(r.body.type).toBe("user.registered")
        expect(validSignature(secret, r.signature, r.raw)).toBe(true)
      }
      expect(sink.calls()).toBe(6)
      const log = await call(second.base, "GET", `/v1/admin/webhooks/${hook.body.data.id}/deliveries`, { token: admin.body.data.token })
      expect(log.status).toBe(200)
      expect(log.body.data.map((d: { status: string }) => d.status)).toEqual(["delivered", "delivered", "delivered"])
      expect(log.body.data[2].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([503, 503, 503, 200])
      await second.stop()
    } finally {
      await sql.end()
    }
  }, 360_000)
})
