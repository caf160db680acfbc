import type { PGlite } from "@electric-sql/pglite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import parsePrometheusTextFormat, { type PrometheusFamily, type PrometheusSample } from "parse-prometheus-text-format"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { loadConfig } from "../../src/platform/Config.ts"
import { days, servicesFixtures } from "../billing/services-fixtures.ts"
import { appOnPrivateDatabase } from "../support/private-database.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { subscriber } from "../vpn/fixtures.ts"

// [D102]: GET /metrics, the Prometheus text format, behind METRICS_TOKEN or else loopback only.

const LOCAL = { "x-forwarded-for": "127.0.0.1" }

const scrapeFrom = async (app: TestApp, headers: Record<string, string> = LOCAL) => {
  const res = await app.get("/metrics", { headers })
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
  return { text: res.text, families: parsePrometheusTextFormat(res.text) }
}

const family = (families: ReadonlyArray<PrometheusFamily>, name: string): PrometheusFamily => {
  const found = families.find((f) => f.name === name)
  if (found === undefined) throw new Error(`no metric ${name}`)
  return found
}

/** the sample of `name` whose labels include `labels`, if any */
const sample = (families: ReadonlyArray<PrometheusFamily>, name: string, labels: Record<string, string> = {}): PrometheusSample | undefined =>
  family(families, name).metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))

const value = (families: ReadonlyArray<PrometheusFamily>, name: string, labels: Record<string, string> = {}) => {
  const found = sample(families, name, labels)
  return found?.value === undefined ? undefined : Number(found.value)
}

/** the value of the one series of `name` whose labels are exactly `labels`, read from the exposition's lines */
const seriesValue = (text: string, name: string, labels: Record<string, string>) => {
  const wanted = JSON.stringify(Object.entries(labels).sort())
  const values = text.split("\n").flatMap((line) => {
    const match = /^(\w+)\{(.*)\} (\S+)$/.exec(line)
    if (match === null || match[1] !== name) return []
    const seen = [...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]).sort()
    return JSON.stringify(seen) === wanted ? [Number(match[3])] : []
  })
  expect(values.length).toBeLessThanOrEqual(1)
  return values[0]
}

describe("figures [D102]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp()
  })
  afterAll(() => app.dispose())

  test("requests are counted by route template and status, never by raw path; latency per route in buckets", async () => {
    const user = await app.createUser()
    const invoice = crypto.randomUUID()
    expect((await app.get("/v1/plans")).status).toBe(200)
    expect((await app.get("/v1/plans?page=1")).status).toBe(200)
    expect((await app.get(`/v1/invoices/${invoice}`, { token: user.token })).status).toBe(404)
    expect((await app.get("/v1/no/such/route-xyz")).status).toBe(404)
    expect((await app.request("DELETE", "/v1/plans")).status).toBe(405)

    const { families, text } = await scrapeFrom(app)
    const requests = "vpn_api_http_requests_total"
    expect(family(families, requests).type).toBe("COUNTER")
    expect(value(families, requests, { method: "GET", route: "/v1/plans", status: "200" })).toBe(2)
    expect(value(families, requests, { method: "GET", route: "/v1/invoices/:invoice", status: "404" })).toBe(1)
    expect(value(families, requests, { method: "GET", route: "unmatched", status: "404" })).toBe(1)
    expect(value(families, requests, { method: "DELETE", route: "/v1/plans", status: "405" })).toBe(1)
    // the raw paths never become labels
    expect(text).not.toContain(invoice)
    expect(text).not.toContain("route-xyz")
    expect(text).not.toContain("page=1")

    const latency = family(families, "vpn_api_http_request_duration_seconds")
    expect(latency.type).toBe("HISTOGRAM")
    expect(Object.keys(latency.metrics[0]?.buckets ?? {}).sort()).toEqual(
      ["0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"].sort()
    )
    // the parser folds the series of a labelled histogram into one: each route's own lines are read from the text
    const histogram = "vpn_api_http_request_duration_seconds"
    expect(seriesValue(text, `${histogram}_count`, { method: "GET", route: "/v1/plans" })).toBe(2)
    expect(seriesValue(text, `${histogram}_bucket`, { method: "GET", route: "/v1/plans", le: "+Inf" })).toBe(2)
    expect(seriesValue(text, `${histogram}_bucket`, { method: "GET", route: "/v1/plans", le: "10" })).toBe(2)
    expect(seriesValue(text, `${histogram}_sum`, { method: "GET", route: "/v1/plans" })).toBeGreaterThan(0)
    expect(seriesValue(text, `${histogram}_count`, { method: "GET", route: "/v1/invoices/:invoice" })).toBe(1)
    expect(seriesValue(text, `${histogram}_count`, { method: "GET", route: "unmatched" })).toBe(1)

    // the scrape itself is a request like any other: the next one sees it
    const again = await scrapeFrom(app)
    expect(value(again.families, requests, { method: "GET", route: "/metrics", status: "200" })).toBeGreaterThanOrEqual(1)
    expect(value(again.families, "vpn_api_http_requests_in_flight")).toBe(1)
  })

  test("a 429 of a spec limit is counted as a refusal of that limit", async () => {
    const from = { "x-forwarded-for": "203.0.113.77" }
    const statuses: Array<number> = []
    for (let i = 0; i < 6; i++) {
      statuses.push((await app.post("/v1/auth/login", { body: { email: "refused@example.com", password: "Wrong-password-1" }, headers: from })).status)
    }
    expect(statuses.at(-1)).toBe(429)
    const { families } = await scrapeFrom(app)
    expect(value(families, "vpn_api_rate_limit_refusals_total", { limit: "login" })).toBe(1)
    expect(value(families, "vpn_api_http_requests_total", { method: "POST", route: "/v1/auth/login", status: "429" })).toBe(1)
  })

  test("a run of the jobs is recorded: outcome, end time, duration and rows per step", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan()
    const cycleId = await fx.cycle(planId)
    const user = await app.createUser()
    await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(app.clock.get(), -1), autoRenew: false })
    app.clock.advance(1000)
    const report = await app.run(runJobsOnce)
    expect(report.expired).toBe(1)

    const { families } = await scrapeFrom(app)
    expect(value(families, "vpn_api_jobs_runs_total", { outcome: "done" })).toBe(1)
    expect(value(families, "vpn_api_jobs_last_run_timestamp_seconds")).toBe(app.clock.get().getTime() / 1000)
    expect(value(families, "vpn_api_jobs_last_run_duration_seconds")).toBeGreaterThan(0)
    expect(value(families, "vpn_api_jobs_rows_total", { step: "expired" })).toBe(1)
    expect(value(families, "vpn_api_jobs_rows_total", { step: "invoices_cancelled" })).toBe(0)
    // [D96]: the "service expired" notice written with it; no delivered mail old enough to purge yet
    expect(value(families, "vpn_api_jobs_rows_total", { step: "notices_written" })).toBe(1)
    expect(value(families, "vpn_api_jobs_rows_total", { step: "outbox_purged" })).toBe(0)
  })

  test("each node's last poll: its age on the app's clock and the peers it was served", async () => {
    const { server, user } = await subscriber(app)
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })).status).toBe(200)
    expect((await app.get("/v1/node/peers", { token: server.nodeToken })).status).toBe(200)
    app.clock.advance(90_000)

    const { families } = await scrapeFrom(app)
    const labels = { server: String(server.id) }
    expect(value(families, "vpn_api_node_last_poll_age_seconds", labels)).toBe(90)
    expect(value(families, "vpn_api_node_peers_served", labels)).toBe(1)
    expect(value(families, "vpn_api_node_polls_total", labels)).toBe(1)
    // the database's view too (any instance's poll, there after a restart): 90 s, with the server's status
    expect(value(families, "vpn_api_node_last_seen_age_seconds", { server: String(server.id), status: "active" })).toBe(90)
    expect(family(families, "vpn_api_node_last_seen_age_seconds").type).toBe("GAUGE")
  })

  test("a node's last poll survives this instance: another app on the same database shows its age; a node never seen is absent", async () => {
    const { server, user } = await subscriber(app)
    const { server: silent } = await subscriber(app)
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })).status).toBe(200)
    expect((await app.get("/v1/node/peers", { token: server.nodeToken })).status).toBe(200)
    const polledAt = app.clock.get().getTime()
    const other = await makeTestApp({ reset: false })
    try {
      other.clock.set(new Date(polledAt + 120_000))
      const { families } = await scrapeFrom(other)
      expect(value(families, "vpn_api_node_last_seen_age_seconds", { server: String(server.id) })).toBe(120)
      expect(sample(families, "vpn_api_node_last_seen_age_seconds", { server: String(silent.id) })).toBeUndefined()
      // this instance served no poll: its own view has none
      expect(families.find((f) => f.name === "vpn_api_node_last_poll_age_seconds")?.metrics ?? []).toEqual([])
    } finally {
      await other.dispose()
    }
  })
})

describe("password hashes queued [D102]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp({ reset: false, config: { hashConcurrency: 1 } })
  })
  afterAll(() => app.dispose())

  test("logins waiting for the one hashing thread show in the gauge, and leave it", async () => {
    const user = await app.createUser()
    let settled = false
    const logins = Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        app.post("/v1/auth/login", { body: { email: user.email, password: user.password }, headers: { "x-forwarded-for": `198.51.100.${i + 1}` } })
      )
    ).finally(() => {
      settled = true
    })
    let maxQueued = 0
    let maxRunning = 0
    while (!settled) {
      const { families } = await scrapeFrom(app)
      maxQueued = Math.max(maxQueued, value(families, "vpn_api_password_hashes_queued") ?? 0)
      maxRunning = Math.max(maxRunning, value(families, "vpn_api_password_hashes_running") ?? 0)
      await Bun.sleep(10)
    }
    expect((await logins).map((r) => r.status)).toEqual([200, 200, 200])
    expect(maxQueued).toBeGreaterThanOrEqual(1)
    expect(maxRunning).toBe(1)
    const after = await scrapeFrom(app)
    expect(value(after.families, "vpn_api_password_hashes_queued")).toBe(0)
    expect(value(after.families, "vpn_api_password_hashes_running")).toBe(0)
  }, 60_000)
})

describe("the general limit [D102]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp({ reset: false, config: { generalRateLimit: 2 } })
  })
  afterAll(() => app.dispose())

  test("its 429s are counted as refusals of `general`", async () => {
    const from = { "x-forwarded-for": "198.51.100.200" }
    const statuses: Array<number> = []
    for (let i = 0; i < 3; i++) statuses.push((await app.get("/v1/plans", { headers: from })).status)
    expect(statuses).toEqual([200, 200, 429])
    const { families } = await scrapeFrom(app)
    expect(value(families, "vpn_api_rate_limit_refusals_total", { limit: "general" })).toBe(1)
    expect(value(families, "vpn_api_http_requests_total", { method: "GET", route: "/v1/plans", status: "429" })).toBe(1)
  })
})

describe("who may read /metrics [D102]", () => {
  describe("without METRICS_TOKEN: this machine only", () => {
    let app: TestApp
    beforeAll(async () => {
      app = await makeTestApp({ reset: false })
    })
    afterAll(() => app.dispose())

    test("a loopback client (IPv4 or IPv6) reads it", async () => {
      await scrapeFrom(app, { "x-forwarded-for": "127.0.0.1" })
      await scrapeFrom(app, { "x-forwarded-for": "::1" })
      await scrapeFrom(app, { "x-forwarded-for": "127.8.9.10" })
      await scrapeFrom(app, { "x-forwarded-for": "::ffff:127.0.0.1" })
    })

    test("anyone else gets 404 in the envelope, as for a route that does not exist", async () => {
      const elsewhere: ReadonlyArray<Record<string, string>> = [
        { "x-forwarded-for": "203.0.113.9" },
        { "x-forwarded-for": "10.0.0.1" },
        { "x-forwarded-for": "::ffff:10.0.0.1" },
        {}
      ]
      for (const headers of elsewhere) {
        const res = await app.get("/metrics", { headers })
        expect(res.status).toBe(404)
        expect(res.body).toEqual({ success: false, message: "Resource not found." })
      }
      // a client cannot pose as local: only the entry the trusted proxy appended counts
      const spoofed = await app.get("/metrics", { headers: { "x-forwarded-for": "127.0.0.1, 203.0.113.9" } })
      expect(spoofed.status).toBe(404)
    })
  })

  describe("with METRICS_TOKEN: the bearer token, from anywhere", () => {
    const token = "metrics-token-0123456789abcdef"
    let app: TestApp
    beforeAll(async () => {
      app = await makeTestApp({ reset: false, config: { metricsToken: Option.some(Redacted.make(token)) } })
    })
    afterAll(() => app.dispose())

    test("the right token: 200, also from a remote address", async () => {
      const remote = await app.get("/metrics", { token, headers: { "x-forwarded-for": "203.0.113.9" } })
      expect(remote.status).toBe(200)
      expect(parsePrometheusTextFormat(remote.text).some((f) => f.name === "vpn_api_http_requests_total")).toBe(true)
    })

    test("a wrong or missing token: 401 in the envelope, loopback included", async () => {
      for (const init of [
        { token: "metrics-token-0123456789abcdeX" },
        { token: token.slice(0, -1) },
        { headers: { authorization: `Basic ${token}` } },
        {},
        { headers: LOCAL }
      ]) {
        const res = await app.get("/metrics", init)
        expect(res.status).toBe(401)
        expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
      }
    })
  })
})

describe("METRICS_TOKEN configuration [D102]", () => {
  const load = (env: Record<string, string>) =>
    Effect.runSync(Effect.either(loadConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

  test("unset by default; when set, kept redacted", () => {
    expect(Option.isNone(Either.getOrThrow(load({})).metricsToken)).toBe(true)
    const config = Either.getOrThrow(load({ METRICS_TOKEN: "abcdefghijklmnop" }))
    expect(Option.map(config.metricsToken, Redacted.value)).toEqual(Option.some("abcdefghijklmnop"))
    expect(String(Option.getOrThrow(config.metricsToken))).not.toContain("abcdefghijklmnop")
  })

  test.each([
    ["too short", "short"],
    ["a space", "with a space inside it"],
    ["too long", "x".repeat(513)],
    ["a tab", "tab\tinside-the-token-value"]
  ])("a bad value (%s) is one start-up line naming it", (_, bad) => {
    expect(load({ METRICS_TOKEN: bad })).toEqual(Either.left("Invalid configuration: METRICS_TOKEN: must be 16 to 512 visible ASCII characters (no spaces)"))
  })
})

describe("database errors [D102]", () => {
  let app: TestApp | undefined
  let db: PGlite | undefined
  afterAll(async () => {
    await app?.dispose().catch(() => {})
    await db?.close().catch(() => {})
  })

  test("a failed query (500) and a lost connection (503) are counted by kind", async () => {
    const made = await appOnPrivateDatabase()
    ;({ app, db } = made)
    const { server } = made
    const user = await app.createUser()

    await app.sql`drop table ticket_replies`
    await app.sql`drop table tickets`
    expect((await app.get("/v1/tickets", { token: user.token })).status).toBe(500)
    await server.stop()
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(503)

    const { families } = await scrapeFrom(app)
    expect(value(families, "vpn_api_database_errors_total", { kind: "query" })).toBe(1)
    expect(value(families, "vpn_api_database_errors_total", { kind: "connection_lost" })).toBe(1)
  }, 60_000)
})
