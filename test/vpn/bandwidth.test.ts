import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Tokens } from "../../src/accounts/Tokens.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, GIB, makePlan, makeService, setUsage } from "./fixtures.ts"

// [D55]: bandwidth through the API.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const customer = async (limitGb = 100) => {
  const user = await app.createUser()
  const plan = await makePlan(app, limitGb)
  const serviceId = await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  return { user, me, plan, serviceId }
}

describe("GET /v1/bandwidth/current [D55]", () => {
  test("this month's usage of the current service", async () => {
    const { me, serviceId } = await customer(100)
    await setUsage(app, serviceId, "2026-01", GIB, GIB / 2)
    await setUsage(app, serviceId, "2025-12", 7 * GIB)
    expect(await ok(me.vpn.currentBandwidth())).toEqual({
      used_bytes: 1.5 * GIB,
      limit_bytes: 100 * GIB,
      used_formatted: "1.50 GB",
      limit_formatted: "100.00 GB",
      percentage: 1.5,
      unlimited: false,
      reset_date: "2026-02-01",
      throttled: false
    })
  })

  test("zero without any record", async () => {
    const { me } = await customer(10)
    expect(await ok(me.vpn.currentBandwidth())).toMatchObject({ used_bytes: 0, used_formatted: "0.00 B", percentage: 0, limit_bytes: 10 * GIB })
  })

  test("an unlimited plan: limit_bytes and percentage null, Unlimited, unlimited true", async () => {
    const { me, serviceId } = await customer(0)
    await setUsage(app, serviceId, "2026-01", 2048)
    expect(await ok(me.vpn.currentBandwidth())).toEqual({
      used_bytes: 2048,
      limit_bytes: null,
      used_formatted: "2.00 KB",
      limit_formatted: "Unlimited",
      percentage: null,
      unlimited: true,
      reset_date: "2026-02-01",
      throttled: false
    })
  })

  test("reset_date follows the clock across the year end", async () => {
    const { user, serviceId } = await customer()
    await app.sql`update services set expires_at = '2027-06-01T00:00:00Z' where id = ${serviceId}`
    app.clock.set(new Date("2026-12-31T23:59:00Z"))
    try {
      // a token issued now (the first one expired with the jump)
      const token = await app.run(Effect.flatMap(Tokens, (t) => t.issue(user.id)))
      const now = await typedClient(app, { token })
      expect((await ok(now.vpn.currentBandwidth())).reset_date).toBe("2027-01-01")
    } finally {
      app.clock.set(new Date("2026-01-15T12:00:00.000Z"))
    }
  })

  test("404 without a current service; 401 without a token", async () => {
    const user = await app.createUser()
    for (const path of ["/v1/bandwidth/current", "/v1/bandwidth/history", "/v1/bandwidth/summary"]) {
      const res = await app.get(path, { token: user.token })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
      expect((await app.get(path)).status).toBe(401)
    }
  })
})

describe("GET /v1/services/{service}/bandwidth [D55]", () => {
  test("that service of the caller, even when not current; another user's is 404", async () => {
    const { user, me, plan } = await customer(50)
    const old = await makeService(app, user.id, plan, { status: "expired", expiresAt: new Date(app.clock.get().getTime() - DAY) })
    await setUsage(app, old, "2026-01", 25 * GIB)
    expect(await ok(me.vpn.serviceBandwidth({ path: { service: old } }))).toMatchObject({ used_bytes: 25 * GIB, percentage: 50, limit_formatted: "50.00 GB" })
    const stranger = await app.createUser()
    const other = await app.get(`/v1/services/${old}/bandwidth`, { token: stranger.token })
    expect(other.status).toBe(404)
    expect((await app.get("/v1/services/999999/bandwidth", { token: user.token })).status).toBe(404)
    expect((await app.get("/v1/services/abc/bandwidth", { token: user.token })).status).toBe(404)
  })
})

describe("GET /v1/bandwidth/history and /summary [D55]", () => {
  test("newest first, only months with usage, at most 12", async () => {
    const { me, serviceId } = await customer()
    // 14 months with usage (2024-12 .. 2026-01) and one empty month
    for (let i = 0; i < 14; i++) {
      const d = new Date(Date.UTC(2026, 0 - i, 1))
      await setUsage(app, serviceId, d.toISOString().slice(0, 7), (i + 1) * 1024)
    }
    await setUsage(app, serviceId, "2026-01", 0)
    const history = await ok(me.vpn.bandwidthHistory())
    const periods = history.map((e) => e.period)
    expect(periods).toHaveLength(12)
    expect(periods[0]).toBe("2025-12")
    expect(periods[11]).toBe("2025-01")
    expect([...periods].sort().reverse()).toEqual(periods)
    expect(history[0]).toEqual({ period: "2025-12", used_bytes: 2048, used_formatted: "2.00 KB" })
  })

  test("only the current service's months", async () => {
    const { user, me, plan, serviceId } = await customer()
    const old = await makeService(app, user.id, plan, { status: "expired", createdAt: new Date(app.clock.get().getTime() - 90 * DAY) })
    await setUsage(app, old, "2025-10", 999)
    await setUsage(app, serviceId, "2025-12", 100)
    await setUsage(app, serviceId, "2026-01", 50)
    expect(await ok(me.vpn.bandwidthHistory())).toEqual([
      { period: "2026-01", used_bytes: 50, used_formatted: "50.00 B" },
      { period: "2025-12", used_bytes: 100, used_formatted: "100.00 B" }
    ])
    expect(await ok(me.vpn.bandwidthSummary())).toEqual({
      total_used_bytes: 150,
      total_used_formatted: "150.00 B",
      current_month_bytes: 50,
      current_month_formatted: "50.00 B"
    })
  })

  test("summary without usage this month", async () => {
    const { me, serviceId } = await customer()
    await setUsage(app, serviceId, "2025-11", GIB, GIB)
    expect(await ok(me.vpn.bandwidthSummary())).toEqual({
      total_used_bytes: 2 * GIB,
      total_used_formatted: "2.00 GB",
      current_month_bytes: 0,
      current_month_formatted: "0.00 B"
    })
  })
})
