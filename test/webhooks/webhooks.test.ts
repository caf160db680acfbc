import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { isPrivateAddress } from "../../src/webhooks/Addresses.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, type TypedClient, typedClient, withToken } from "../support/typed.ts"

// [D101]: outgoing webhooks: endpoints, signed deliveries through the outbox, in order per
// endpoint, retried, logged; and the URL rules that keep them off private addresses.
setDefaultTimeout(30_000)

interface Received {
  readonly path: string
  readonly signature: string
  readonly raw: string
  readonly body: { id: string; type: string; created_at: string; data: Record<string, unknown> }
}

/** a local receiver: answers `failures` 500s first, then 200s (or what `answer` says) */
const receiver = (options: { failures?: number; answer?: (req: Request) => Response | undefined } = {}) => {
  const received: Array<Received> = []
  let calls = 0
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      calls += 1
      const raw = await req.text()
      const custom = options.answer?.(req)
      if (custom !== undefined) return custom
      if (calls <= (options.failures ?? 0)) return new Response("no", { status: 500 })
      received.push({ path: new URL(req.url).pathname, signature: req.headers.get("x-signature") ?? "", raw, body: JSON.parse(raw) })
      return new Response("ok")
    }
  })
  return { received, url: `http://127.0.0.1:${server.port}`, calls: () => calls, stop: () => server.stop(true) }
}

/** [D40]'s check, as a receiver would do it */
const validSignature = (secret: string, header: string, raw: string) => {
  const parts = new Map(header.split(",").map((p) => p.split("=", 2) as [string, string]))
  const t = parts.get("t")
  const v1 = parts.get("v1")
  return t !== undefined && v1 !== undefined && createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex") === v1
}

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(20)
  }
  return false
}

let app: TestApp
let open: TestApp
let admin: { token: string }
let openAdmin: { token: string }
/** the admin through the typed client of the contract, on each instance */
let staff: TypedClient
let openStaff: TypedClient
const stops: Array<() => void> = []

beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  // the same database, private addresses allowed: the local receivers are reachable
  open = await makeTestApp({ reset: false, config: { webhooksAllowPrivate: true } })
  openAdmin = admin
  staff = await typedClient(app, { token: admin.token })
  openStaff = await typedClient(open, { token: openAdmin.token })
})
afterAll(async () => {
  for (const stop of stops) stop()
  await open.dispose()
  await app.dispose()
})

/** a registration through the typed client (its declared 201 answer), from an address of its own */
const register = async (a: TestApp, email: string) => {
  const guest = await typedClient(a, { headers: { "x-forwarded-for": `198.51.100.${Math.floor(Math.random() * 200) + 1}` } })
  return withToken(
    await ok(guest.accounts.register({ payload: { name: "Hook User", email, password: "Sup3r-Secret-Pass!", password_confirmation: "Sup3r-Secret-Pass!" } }))
  )
}

describe("webhook endpoints [D101]", () => {
  test("create answers 201 with the secret once; get/list/update never show it; delete is 404 after", async () => {
    const created = await app.post("/v1/admin/webhooks", {
      token: admin.token,
      body: { url: "https://hooks.example.com/in", events: ["user.registered", "invoice.paid"], description: "CRM" }
    })
    expect(created.status).toBe(201)
    expect(created.headers.get("cache-control")).toBe("no-store")
    const hook = created.body.data
    expect(hook).toMatchObject({ url: "https://hooks.example.com/in", events: ["user.registered", "invoice.paid"], description: "CRM" })
    expect(typeof hook.secret).toBe("string")
    expect(hook.secret.length).toBeGreaterThanOrEqual(32)

    const got = await app.get(`/v1/admin/webhooks/${hook.id}`, { token: admin.token })
    expect(got.status).toBe(200)
    expect(got.body.data.secret).toBeUndefined()
    expect(got.text).not.toContain(hook.secret)

    const list = await app.get("/v1/admin/webhooks", { token: admin.token })
    expect(list.status).toBe(200)
    expect(list.body.meta).toMatchObject({ current_page: 1, per_page: 15 })
    expect(list.body.data.map((h: { id: number }) => h.id)).toContain(hook.id)
    expect(list.text).not.toContain(hook.secret)

    // stored sealed, not as given
    const [row] = await app.sql<{ secret: string }>`select secret from webhook_endpoints where id = ${hook.id}`
    expect(row!.secret).not.toContain(hook.secret)

    const updated = await ok(staff.webhooksAdmin.updateWebhook({ path: { id: hook.id }, payload: { events: ["ticket.created"], description: null } }))
    expect(updated).toMatchObject({ url: "https://hooks.example.com/in", events: ["ticket.created"], description: null })

    // the declared 200 answer, then the declared 404s
    expect(typeof (await ok(staff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } })))).toBe("string")
    expect((await fails(staff.webhooksAdmin.getWebhook({ path: { id: hook.id } })))._tag).toBe("NotFound")
    expect((await fails(staff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } })))._tag).toBe("NotFound")
    expect((await fails(staff.webhooksAdmin.listWebhookDeliveries({ path: { id: hook.id }, urlParams: {} })))._tag).toBe("NotFound")
  })

  test("an unknown event, no events, a missing url: 422 with the field's error", async () => {
    const unknown = await app.post("/v1/admin/webhooks", {
      token: admin.token,
      body: { url: "https://hooks.example.com/in", events: ["user.registered", "user.deleted"] }
    })
    expect(unknown.status).toBe(422)
    expect(unknown.body.success).toBe(false)
    expect(unknown.body.errors.events).toEqual(["The selected events is invalid."])
    const none = await app.post("/v1/admin/webhooks", { token: admin.token, body: { url: "https://hooks.example.com/in", events: [] } })
    expect(none.status).toBe(422)
    expect(Object.keys(none.body.errors)).toEqual(["events"])
    const missing = await app.post("/v1/admin/webhooks", { token: admin.token, body: { events: "user.registered" } })
    expect(missing.status).toBe(422)
    expect(Object.keys(missing.body.errors).sort()).toEqual(["events", "url"])
    const first = await ok(staff.webhooksAdmin.createWebhook({ payload: { url: "https://hooks.example.com/in", events: ["user.registered"] } }))
    const badUpdate = await app.put(`/v1/admin/webhooks/${first.id}`, { token: admin.token, body: { events: ["nope"] } })
    expect(badUpdate.status).toBe(422)
    expect(badUpdate.body.errors.events).toBeDefined()
  })

  test("a user is refused; another id is 404", async () => {
    const user = await app.createUser()
    expect((await app.get("/v1/admin/webhooks", { token: user.token })).status).toBe(403)
    expect((await app.post("/v1/admin/webhooks", { token: user.token, body: { url: "https://a.example.com", events: ["user.registered"] } })).status).toBe(403)
    expect((await fails(staff.webhooksAdmin.getWebhook({ path: { id: 999999 } })))._tag).toBe("NotFound")
    expect((await fails(staff.webhooksAdmin.redeliverWebhook({ path: { id: 999999, delivery: 1 } })))._tag).toBe("NotFound")
  })
})

describe("URL rules: no private address without WEBHOOKS_ALLOW_PRIVATE [D101]", () => {
  const refused = [
    "http://hooks.example.com/in",
    "https://localhost/in",
    "https://127.0.0.1/in",
    "https://127.1.2.3:8443/in",
    "https://10.0.0.7/in",
    "https://172.16.5.4/in",
    "https://192.168.1.1/in",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/",
    "https://0.0.0.0/",
    "https://[::1]/in",
    "https://[fd00::1]/in",
    "https://[fe80::1]/in",
    "https://[::ffff:127.0.0.1]/in",
    "https://[::ffff:a9fe:a9fe]/in",
    "https://2130706433/in",
    "https://0x7f.1/in",
    "ftp://hooks.example.com/in",
    "not a url"
  ]
  for (const url of refused) {
    test(`${url} is 422 errors.url`, async () => {
      const res = await app.post("/v1/admin/webhooks", { token: admin.token, body: { url, events: ["user.registered"] } })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["url"])
    })
  }

  test("a name that resolves to a private address (/etc/hosts) is refused after resolution", async () => {
    // every name /etc/hosts gives a private address, e.g. the machine's own name
    const names = readFileSync("/etc/hosts", "utf8")
      .split("\n")
      .map((line) => line.replace(/#.*/, "").trim().split(/\s+/))
      .filter((parts) => parts.length > 1 && isPrivateAddress(parts[0]!))
      .flatMap((parts) => parts.slice(1))
    for (const url of ["https://LOCALHOST./in", ...names.map((n) => `https://${n}:8443/in`)]) {
      const res = await app.post("/v1/admin/webhooks", { token: admin.token, body: { url, events: ["user.registered"] } })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["url"])
    }
  })

  test("an update to a private URL is 422 too, the endpoint unchanged", async () => {
    const hook = await ok(staff.webhooksAdmin.createWebhook({ payload: { url: "https://hooks.example.com/keep", events: ["user.registered"] } }))
    const res = await app.put(`/v1/admin/webhooks/${hook.id}`, { token: admin.token, body: { url: "https://127.0.0.1/x" } })
    expect(res.status).toBe(422)
    expect(res.body.errors.url).toBeDefined()
    expect((await ok(staff.webhooksAdmin.getWebhook({ path: { id: hook.id } }))).url).toBe("https://hooks.example.com/keep")
  })

  test("the address classes, IPv4-mapped IPv6 included", () => {
    for (const ip of [
      "127.0.0.1",
      "10.1.2.3",
      "172.31.255.255",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "::1",
      "::",
      "fc00::1",
      "fdff::1",
      "fe80::1",
      "::ffff:10.0.0.1",
      "::ffff:7f00:1",
      "64:ff9b::a9fe:a9fe"
    ]) {
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, true])
    }
    for (const ip of ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, false])
    }
  })

  test("at send time: an endpoint whose URL now points to a loopback address gets no request", async () => {
    const sink = receiver()
    stops.push(sink.stop)
    // created while private addresses were allowed, then sent by an instance that does not allow them
    const hook = await ok(openStaff.webhooksAdmin.createWebhook({ payload: { url: `${sink.url}/blocked`, events: ["user.registered"] } }))
    await register(app, `blocked${Date.now()}@example.com`)
    await app.run(runJobsOnce)
    const log = await ok(staff.webhooksAdmin.listWebhookDeliveries({ path: { id: hook.id }, urlParams: {} }))
    expect(log.data.length).toBe(1)
    expect(log.data[0]!.attempts.length).toBeGreaterThanOrEqual(1)
    expect(log.data[0]!.attempts[0]!.status_code).toBeNull()
    expect(log.data[0]!.attempts[0]!.error).toContain("https://")
    expect(sink.calls()).toBe(0)
    await ok(openStaff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } }))
  })
})

describe("deliveries [D101]", () => {
  test("a receiver failing three times gets each event once, in order, signed, the id stable; the log shows the attempts", async () => {
    const sink = receiver({ failures: 3 })
    stops.push(sink.stop)
    // the declared 201 answer
    const created = await ok(openStaff.webhooksAdmin.createWebhook({ payload: { url: `${sink.url}/hook`, events: ["user.registered"] } }))
    const { id, secret } = created
    const emails = [0, 1, 2].map((i) => `ordered${i}-${Date.now()}@example.com`)
    for (const email of emails) expect((await register(open, email)).user.email).toBe(email)

    // the wake after each commit tried the first one: it failed; retries come with the (test) clock
    for (let i = 0; i < 12 && sink.received.length < 3; i++) {
      open.clock.advance(3_600_000)
      await open.run(runJobsOnce)
    }
    expect(await waitUntil(() => sink.received.length >= 3)).toBe(true)
    await open.run(runJobsOnce)
    expect(sink.received.map((r) => r.body.data["email"])).toEqual(emails)
    for (const r of sink.received) {
      expect(r.path).toBe("/hook")
      expect(validSignature(secret, r.signature, r.raw)).toBe(true)
      expect(r.body.type).toBe("user.registered")
      expect(Object.keys(r.body).sort()).toEqual(["created_at", "data", "id", "type"])
      expect(JSON.stringify(r.body.data)).not.toContain("password")
    }
    expect(sink.calls()).toBe(6)

    const log = await ok(openStaff.webhooksAdmin.listWebhookDeliveries({ path: { id }, urlParams: {} }))
    const deliveries = log.data
    expect(deliveries.length).toBe(3)
    // newest first; the oldest took the three failures
    const oldest = deliveries[2]!
    expect(oldest.status).toBe("delivered")
    expect(oldest.attempts.map((a) => a.status_code)).toEqual([500, 500, 500, 200])
    for (const a of oldest.attempts) expect(a.latency_ms).toBeGreaterThanOrEqual(0)
    expect(oldest.event_id).toBe(sink.received[0]!.body.id)

    // redelivery: the same event id again, freshly signed
    // the declared 202 answer
    const again = await ok(openStaff.webhooksAdmin.redeliverWebhook({ path: { id, delivery: oldest.id } }))
    expect(again.data.id).toBe(oldest.id)
    expect(await waitUntil(() => sink.received.length >= 4)).toBe(true)
    expect(sink.received[3]!.body.id).toBe(oldest.event_id)
    expect(validSignature(secret, sink.received[3]!.signature, sink.received[3]!.raw)).toBe(true)
    expect((await fails(openStaff.webhooksAdmin.redeliverWebhook({ path: { id, delivery: 999999 } })))._tag).toBe("NotFound")
    await ok(openStaff.webhooksAdmin.deleteWebhook({ path: { id } }))
  })

  test("a redirect is not followed: it is a failed attempt", async () => {
    const target = receiver()
    stops.push(target.stop)
    const redirecting = receiver({ answer: () => new Response(null, { status: 307, headers: { location: `${target.url}/stolen` } }) })
    stops.push(redirecting.stop)
    const hook = await ok(openStaff.webhooksAdmin.createWebhook({ payload: { url: `${redirecting.url}/in`, events: ["user.registered"] } }))
    await register(open, `redirect${Date.now()}@example.com`)
    await open.run(runJobsOnce)
    expect(await waitUntil(() => redirecting.calls() >= 1)).toBe(true)
    await Bun.sleep(200)
    expect(target.calls()).toBe(0)
    const log = await ok(openStaff.webhooksAdmin.listWebhookDeliveries({ path: { id: hook.id }, urlParams: {} }))
    expect(log.data[0]!.status).toBe("pending")
    expect(log.data[0]!.attempts[0]!.status_code).toBe(307)
    await ok(openStaff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } }))
  })

  test("a receiver that does not answer within 10 s is a failed attempt, retried later", async () => {
    let calls = 0
    const slow = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async () => {
        calls += 1
        await Bun.sleep(12_000)
        return new Response("late")
      }
    })
    stops.push(() => slow.stop(true))
    const hook = await ok(openStaff.webhooksAdmin.createWebhook({ payload: { url: `http://127.0.0.1:${slow.port}/slow`, events: ["user.registered"] } }))
    await register(open, `slow${Date.now()}@example.com`)
    const log = () => ok(openStaff.webhooksAdmin.listWebhookDeliveries({ path: { id: hook.id }, urlParams: {} }))
    expect(await waitUntil(async () => (await log()).data[0]?.attempts.length === 1, 15_000)).toBe(true)
    const attempt = (await log()).data[0]!.attempts[0]!
    expect(attempt.status_code).toBeNull()
    expect(attempt.error).toBe("timed out after 10 s")
    expect(attempt.latency_ms).toBeGreaterThanOrEqual(9_900)
    expect(attempt.latency_ms).toBeLessThan(12_000)
    const [row] = await open.sql<{
      status: string
      attempts: number
    }>`select status, attempts from outbox where channel = 'webhook' and recipient = ${`webhook endpoint ${hook.id}`}`
    expect(row).toEqual({ status: "pending", attempts: 1 })
    expect(calls).toBe(1)
    await ok(openStaff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } }))
  })

  test("an endpoint receives only the events it subscribed to", async () => {
    const sink = receiver()
    stops.push(sink.stop)
    const hook = await ok(openStaff.webhooksAdmin.createWebhook({ payload: { url: `${sink.url}/tickets`, events: ["ticket.created", "ticket.replied"] } }))
    await register(open, `quiet${Date.now()}@example.com`)
    const user = await typedClient(open, { token: (await open.createUser()).token })
    // the declared 201 answers
    const ticket = await ok(user.support.createTicket({ payload: { subject: "Help", message: "It broke" } }))
    const reply = await ok(openStaff.supportAdmin.staffReply({ path: { ticket: ticket.id }, payload: { message: "Fixed" } }))
    expect(reply.is_admin).toBe(true)
    expect(await waitUntil(() => sink.received.length >= 2)).toBe(true)
    await open.run(runJobsOnce)
    expect(sink.received.map((r) => r.body.type)).toEqual(["ticket.created", "ticket.replied"])
    expect(sink.received[0]!.body.data).toMatchObject({ id: ticket.id, subject: "Help" })
    expect(sink.received[1]!.body.data).toMatchObject({ ticket_id: ticket.id, is_staff: true })
    await ok(openStaff.webhooksAdmin.deleteWebhook({ path: { id: hook.id } }))
  })
})
