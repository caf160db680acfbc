import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import parsePrometheusTextFormat, { type PrometheusFamily } from "parse-prometheus-text-format"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { servicesFixtures } from "../billing/services-fixtures.ts"
import { webhookResultOf } from "../../src/webhooks/WebhookMetrics.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { GIB, makeServer } from "../vpn/fixtures.ts"

// [D102] with the alert rules of issue 29: the figures the rooms add beside platform/Metrics.ts,
// read through GET /metrics: webhook delivery attempts by result ([D101]) and notices written by
// kind ([D96]), every label value present at 0 from the start (a first failure is an increase).
setDefaultTimeout(30_000)

const LOCAL = { "x-forwarded-for": "127.0.0.1" }

let app: TestApp
let admin: { token: string }
beforeAll(async () => {
  // local receivers are on 127.0.0.1: private addresses allowed ([D101])
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const scrape = async () => {
  const res = await app.get("/metrics", { headers: LOCAL })
  expect(res.status).toBe(200)
  return parsePrometheusTextFormat(res.text)
}

const family = (families: ReadonlyArray<PrometheusFamily>, name: string): PrometheusFamily => {
  const found = families.find((f) => f.name === name)
  if (found === undefined) throw new Error(`no metric ${name}`)
  return found
}

/** the value of the series of `name` whose labels are exactly `labels` */
const value = (families: ReadonlyArray<PrometheusFamily>, name: string, labels: Record<string, string>) => {
  const wanted = JSON.stringify(Object.entries(labels).sort())
  const found = family(families, name).metrics.filter((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === wanted)
  return found[0]?.value === undefined ? undefined : Number(found[0].value)
}

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await Bun.sleep(20)
  }
  return false
}

const register = (email: string) =>
  app.post("/v1/auth/register", {
    headers: { "x-forwarded-for": `203.0.113.${Math.floor(Math.random() * 200) + 1}` },
    body: { name: "Metric", email, password: "Str0ng-Passw0rd!", password_confirmation: "Str0ng-Passw0rd!" }
  })

describe("webhook delivery attempts by result [D102] [D101]", () => {
  test("every result is a series at 0 before any delivery", async () => {
    const families = await scrape()
    expect(family(families, "vpn_api_webhook_deliveries_total").type).toBe("COUNTER")
    for (const result of ["delivered", "http_3xx", "http_4xx", "http_5xx", "timeout", "unreachable"]) {
      expect(value(families, "vpn_api_webhook_deliveries_total", { result })).toBe(0)
    }
  })

  test("a receiver answering 500 then 200 counts one http_5xx and one delivered; a closed port unreachable; 410 http_4xx; a redirect http_3xx", async () => {
    let calls = 0
    const sink = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => ((calls += 1) === 1 ? new Response("no", { status: 500 }) : new Response("ok"))
    })
    try {
      const hook = await app.post("/v1/admin/webhooks", {
        token: admin.token,
        body: { url: `http://127.0.0.1:${sink.port}/in`, events: ["user.registered"] }
      })
      expect(hook.status).toBe(201)
      expect((await register(`hook-metric-${Date.now()}@example.com`)).status).toBe(201)
      expect(await waitUntil(async () => value(await scrape(), "vpn_api_webhook_deliveries_total", { result: "http_5xx" }) === 1)).toBe(true)
      // the retry is due 10 s later on the app's clock
      app.clock.advance(60_000)
      await app.run(runJobsOnce)
      expect(await waitUntil(async () => value(await scrape(), "vpn_api_webhook_deliveries_total", { result: "delivered" }) === 1)).toBe(true)
      expect(calls).toBe(2)
      await app.del(`/v1/admin/webhooks/${hook.body.data.id}`, { token: admin.token })
    } finally {
      sink.stop(true)
    }

    // a port nobody listens on any more
    const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") })
    const closedPort = gone.port
    gone.stop(true)
    const closed = await app.post("/v1/admin/webhooks", {
      token: admin.token,
      body: { url: `http://127.0.0.1:${closedPort}/in`, events: ["user.registered"] }
    })
    expect(closed.status).toBe(201)
    expect((await register(`closed-metric-${Date.now()}@example.com`)).status).toBe(201)
    expect(await waitUntil(async () => value(await scrape(), "vpn_api_webhook_deliveries_total", { result: "unreachable" }) === 1)).toBe(true)
    await app.del(`/v1/admin/webhooks/${closed.body.data.id}`, { token: admin.token })

    // a receiver answering 410, and one answering a redirect (never followed, [D101])
    const refusing = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("gone", { status: 410 }) })
    const redirecting = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => new Response(null, { status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } })
    })
    try {
      const hooks = []
      for (const port of [refusing.port, redirecting.port]) {
        const hook = await app.post("/v1/admin/webhooks", { token: admin.token, body: { url: `http://127.0.0.1:${port}/in`, events: ["user.registered"] } })
        expect(hook.status).toBe(201)
        hooks.push(hook.body.data.id as number)
      }
      expect((await register(`refused-metric-${Date.now()}@example.com`)).status).toBe(201)
      expect(
        await waitUntil(async () => {
          const now = await scrape()
          return (
            value(now, "vpn_api_webhook_deliveries_total", { result: "http_4xx" }) === 1 &&
            value(now, "vpn_api_webhook_deliveries_total", { result: "http_3xx" }) === 1
          )
        })
      ).toBe(true)
      for (const id of hooks) await app.del(`/v1/admin/webhooks/${id}`, { token: admin.token })
    } finally {
      refusing.stop(true)
      redirecting.stop(true)
    }
    const families = await scrape()
    expect(value(families, "vpn_api_webhook_deliveries_total", { result: "timeout" })).toBe(0)
    expect(value(families, "vpn_api_webhook_deliveries_total", { result: "http_5xx" })).toBe(1)
    expect(value(families, "vpn_api_webhook_deliveries_total", { result: "delivered" })).toBe(1)
    expect(value(families, "vpn_api_webhook_deliveries_total", { result: "unreachable" })).toBe(1)
  })

  test("the result of an attempt: the receiver's status by class, a timeout, or never reached", () => {
    expect(webhookResultOf({ statusCode: 204, error: null })).toBe("delivered")
    expect(webhookResultOf({ statusCode: 307, error: "HTTP 307" })).toBe("http_3xx")
    expect(webhookResultOf({ statusCode: 401, error: "HTTP 401" })).toBe("http_4xx")
    expect(webhookResultOf({ statusCode: 503, error: "HTTP 503" })).toBe("http_5xx")
    expect(webhookResultOf({ statusCode: null, error: "timed out after 10 s" })).toBe("timeout")
    expect(webhookResultOf({ statusCode: null, error: "DNS lookup failed: ENOTFOUND" })).toBe("unreachable")
    expect(webhookResultOf({ statusCode: null, error: "connection refused" })).toBe("unreachable")
  })
})

describe("notices written by kind [D102] [D96]", () => {
  test("a quota crossing counts one quota-80 notice written, and its mail sent; a user with notices off counts none", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Metered", bandwidth: 10 })
    const cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "5.00", currency: "EUR" })
    const server = await makeServer(app, { planIds: [planId] })
    const before = await scrape()
    expect(family(before, "vpn_api_notices_written_total").type).toBe("COUNTER")
    expect(value(before, "vpn_api_notices_written_total", { kind: "quota-80" })).toBe(0)
    expect(value(before, "vpn_api_notices_written_total", { kind: "quota-100" })).toBe(0)

    const crossOne = async (notices: boolean) => {
      const user = await app.createUser()
      if (!notices) {
        const off = await app.put("/v1/account/settings", { token: user.token, body: { email_notifications: false } })
        expect(off.status).toBe(200)
      }
      await fx.service({ userId: user.id, planId, cycleId, expiresAt: new Date(Date.now() + 20 * 86_400_000) })
      expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })).status).toBe(200)
      const [peer] = await app.sql<{ public_key: string }>`
        select public_key from wireguard_peers where server_id = ${server.id} and user_id = ${user.id}`
      const report = await app.post("/v1/node/usage", {
        token: server.nodeToken,
        body: [{ public_key: peer!.public_key, rx_bytes: 8.5 * GIB, tx_bytes: 0 }]
      })
      expect(report.status).toBe(200)
      return user
    }

    const off = await crossOne(false)
    expect(value(await scrape(), "vpn_api_notices_written_total", { kind: "quota-80" })).toBe(0)
    expect(app.outbox.filter((m) => m.to === off.email)).toHaveLength(0)

    const on = await crossOne(true)
    expect(await waitUntil(() => app.outbox.some((m) => m.to === on.email))).toBe(true)
    const families = await scrape()
    expect(value(families, "vpn_api_notices_written_total", { kind: "quota-80" })).toBe(1)
    expect(value(families, "vpn_api_notices_written_total", { kind: "quota-100" })).toBe(0)
    expect(value(families, "vpn_api_outbox_deliveries_total", { channel: "mail", kind: "quota-80", outcome: "sent" })).toBe(1)
  })
})
