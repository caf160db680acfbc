import { afterAll, describe, expect, test } from "bun:test"
import { SMTPServer } from "smtp-server"
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
 * [D96] on real server processes, a real PostgreSQL and a real SMTP peer: mail caused while SMTP is
 * down survives a restart of the process and arrives once when SMTP is back; two instances on one
 * database send each mail once.
 */
announceSkip("outbox")

/** an SMTP sink on a fixed port: stopped and started again on the same port */
const smtpSink = (port: number) => {
  const received: Array<{ to: string; subject: string }> = []
  let server: SMTPServer | undefined
  return {
    received,
    start: async () => {
      server = new SMTPServer({
        authOptional: true,
        disabledCommands: ["STARTTLS", "AUTH"],
        logger: false,
        onData(stream, session, callback) {
          const chunks: Array<Buffer> = []
          stream.on("data", (c: Buffer) => chunks.push(c))
          stream.on("end", () => {
            const raw = Buffer.concat(chunks).toString("utf8")
            const subject = /^Subject: (.*)$/m.exec(raw)?.[1] ?? ""
            received.push({ to: session.envelope.rcptTo.map((r) => r.address).join(","), subject })
            callback()
          })
        }
      })
      // a client that drops its connection (the API's pooled mail connection when it stops: ECONNRESET)
      // is the connection's end, not the sink's: without a listener the error would be thrown
      server!.on("error", () => {})
      await new Promise<void>((resolve) => server!.listen(port, "127.0.0.1", () => resolve()))
    },
    stop: () => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  }
}

const register = (base: string, email: string) => {
  const password = strongPassword()
  // an address of its own: the register limit of [D30] is not what this measures
  return call(base, "POST", "/v1/auth/register", {
    body: { name: "Mail Test", email, password, password_confirmation: password },
    headers: freshAddress(),
    timeoutMs: 30_000
  })
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
const sinks: Array<ReturnType<typeof smtpSink>> = []
afterAll(async () => {
  for (const s of running) await s.stop(3000).catch(() => {})
  for (const s of sinks) await s.stop().catch(() => {})
})

describe.skipIf(skipReason !== undefined)("the durable outbox on real processes [D96]", () => {
  test("SMTP down: five mails wait; the process restarts; SMTP back: all five arrive exactly once", async () => {
    const smtpPort = await freePort()
    const sink = smtpSink(smtpPort)
    sinks.push(sink)
    const db = await freshDatabase("outbox_restart")
    const appKey = newAppKey()
    const env = { SMTP_URL: `smtp://127.0.0.1:${smtpPort}` }
    const first = await startServer({ databaseUrl: db.url, appKey, env })
    running.push(first)
    const emails = Array.from({ length: 5 }, (_, i) => uniqueEmail(`restart${i}`).toLowerCase())
    for (const email of emails) expect((await register(first.base, email)).status).toBe(201)

    const sql = await connectSql(db.url)
    try {
      // each was tried once (the wake after its commit) and failed: SMTP is down
      expect(
        await waitUntil(async () => {
          const { rows } = await sql.query<{ n: number }>(`select count(*)::int as n from outbox where attempts >= 1 and status = 'pending'`)
          return rows[0]!.n === 5
        }, 20_000)
      ).toBe(true)
      await first.stop()

      await sink.start()
      // the first retry is 10 s after the failure; the restarted process's jobs pick them up
      await Bun.sleep(10_000)
      const second = await startServer({ databaseUrl: db.url, appKey, env })
      running.push(second)
      expect(await waitUntil(() => sink.received.length >= 5, 30_000)).toBe(true)
      await Bun.sleep(3000)
      expect(sink.received.map((m) => m.to).sort()).toEqual([...emails].sort())
      const { rows } = await sql.query<{ status: string; n: number }>(`select status, count(*)::int as n from outbox group by status`)
      expect(rows).toEqual([{ status: "sent", n: 5 }])
      await second.stop()
    } finally {
      await sql.end()
    }
  }, 120_000)

  test("two instances on one database send each mail once", async () => {
    const smtpPort = await freePort()
    const sink = smtpSink(smtpPort)
    sinks.push(sink)
    await sink.start()
    const db = await freshDatabase("outbox_two")
    const appKey = newAppKey()
    const env = { SMTP_URL: `smtp://127.0.0.1:${smtpPort}` }
    const a = await startServer({ databaseUrl: db.url, appKey, env })
    running.push(a)
    const b = await startServer({ databaseUrl: db.url, appKey, env })
    running.push(b)
    const emails = Array.from({ length: 12 }, (_, i) => uniqueEmail(`two${i}`).toLowerCase())
    const answers = await Promise.all(emails.map((email, i) => register(i % 2 === 0 ? a.base : b.base, email)))
    expect(answers.map((r) => r.status)).toEqual(emails.map(() => 201))
    // both instances' jobs run 5 s after start: they find nothing left to send twice
    expect(await waitUntil(() => sink.received.length >= 12, 30_000)).toBe(true)
    await Bun.sleep(7000)
    expect(sink.received.map((m) => m.to).sort()).toEqual([...emails].sort())
    await a.stop()
    await b.stop()
  }, 120_000)
})
