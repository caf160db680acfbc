import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { GIB, makeServer } from "./fixtures.ts"

// [D95]: quota periods per plan (`monthly`, `billing_day`, `never`): bandwidth current, reset_date,
// history, summary, the 423 of [D52], node `enabled` and node sync ([D92]) follow the plan's period.
// The clock only moves forward in this file (node sync marks each day once).
let app: TestApp
let admin: TypedClient
beforeAll(async () => {
  app = await makeTestApp({ config: { tokenTtlDays: 3650 } })
  app.clock.set(new Date("2026-01-01T00:00:00Z"))
  admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

type Reset = "monthly" | "billing_day" | "never"
let counter = 0

const planWith = async (usageReset: Reset, limitGb = 10) => {
  const [plan] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb, usage_reset)
    values (${`Quota ${++counter}`}, 'test', ${limitGb}, ${usageReset}) returning id`
  const [cycle] = await app.sql<{ id: number }>`
    insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${plan!.id}, 'Monthly', 30, '9.99', 'USD') returning id`
  return { planId: plan!.id, cycleId: cycle!.id }
}

/** a user with a service on a fresh plan of that kind, started at `startsAt`, running for years */
const subscriber = async (usageReset: Reset, startsAt: string, limitGb = 10) => {
  const plan = await planWith(usageReset, limitGb)
  const user = await app.createUser()
  const [row] = await app.sql<{ id: number }>`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, created_at)
    values (${user.id}, ${plan.planId}, ${plan.cycleId}, 'active', ${new Date(startsAt)}, ${new Date("2031-01-01T00:00:00Z")},
            ${new Date(startsAt)})
    returning id`
  const me = await typedClient(app, { token: user.token })
  return { user, me, plan, serviceId: row!.id }
}

/** moves the clock forward to `at` (never back) */
const at = (iso: string) => {
  const to = new Date(iso)
  if (to.getTime() < app.clock.get().getTime()) throw new Error(`the clock only moves forward here: ${iso}`)
  app.clock.set(to)
}

const current = (me: TypedClient) => ok(me.vpn.currentBandwidth())

const addUsage = (serviceId: number, bytes: number, period?: string) =>
  ok(admin.vpnAdmin.recordUsage({ path: { service: serviceId }, payload: period === undefined ? { bytes } : { bytes, period } }))

describe("quota periods [D95]", () => {
  test("monthly (default) is unchanged: calendar months, reset_date the 1st of next month, history YYYY-MM", async () => {
    at("2026-01-20T10:00:00Z")
    const plain = await ok(admin.catalogAdmin.createPlan({ payload: { name: "Default kind" } }))
    expect(plain.usage_reset).toBe("monthly")
    const { serviceId, me } = await subscriber("monthly", "2026-01-10T08:00:00Z")
    expect((await addUsage(serviceId, 1000)).period).toBe("2026-01")
    expect(await current(me)).toMatchObject({ used_bytes: 1000, reset_date: "2026-02-01" })
    at("2026-02-01T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 0, reset_date: "2026-03-01" })
    await addUsage(serviceId, 5)
    const history = await ok(me.vpn.bandwidthHistory())
    expect(history.map((h) => h.period)).toEqual(["2026-02", "2026-01"])
  })

  test("billing_day: periods start on the service's day of the month; usage, reset_date, history, summary and the admin's addition follow", async () => {
    at("2026-02-20T12:00:00Z")
    const { serviceId, me } = await subscriber("billing_day", "2026-01-15T18:30:00Z")
    // Feb 20: the period that started on Feb 15
    expect(await addUsage(serviceId, 2000)).toEqual({ service_id: serviceId, period: "2026-02-15", used_bytes: 2000, used_formatted: "1.95 KB" })
    expect(await current(me)).toMatchObject({ used_bytes: 2000, reset_date: "2026-03-15" })
    const byService = await ok(me.vpn.serviceBandwidth({ path: { service: serviceId } }))
    expect(byService).toMatchObject({ used_bytes: 2000, reset_date: "2026-03-15" })
    // Mar 1 is no reset for it
    at("2026-03-01T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 2000, reset_date: "2026-03-15" })
    await addUsage(serviceId, 1000)
    at("2026-03-14T23:59:59Z")
    expect(await current(me)).toMatchObject({ used_bytes: 3000, reset_date: "2026-03-15" })
    // Mar 15 00:00 UTC: a new period
    at("2026-03-15T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 0, reset_date: "2026-04-15" })
    expect((await addUsage(serviceId, 7)).period).toBe("2026-03-15")
    // an admin naming a month adds to the period that starts in it
    expect((await addUsage(serviceId, 3, "2026-01")).period).toBe("2026-01-15")
    expect(await ok(me.vpn.bandwidthHistory())).toEqual([
      { period: "2026-03-15", used_bytes: 7, used_formatted: "7.00 B" },
      { period: "2026-02-15", used_bytes: 3000, used_formatted: "2.93 KB" },
      { period: "2026-01-15", used_bytes: 3, used_formatted: "3.00 B" }
    ])
    expect(await ok(me.vpn.bandwidthSummary())).toMatchObject({ total_used_bytes: 3010, current_month_bytes: 7 })
  })

  test("billing_day clamps to the month's last day: a service started Jan 31 has periods from Feb 28/29, Mar 31, Apr 30", async () => {
    at("2026-03-20T00:00:00Z")
    const { serviceId, me } = await subscriber("billing_day", "2026-01-31T09:00:00Z")
    expect(await current(me)).toMatchObject({ reset_date: "2026-03-31" })
    expect((await addUsage(serviceId, 1)).period).toBe("2026-02-28")
    at("2026-03-31T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 0, reset_date: "2026-04-30" })
    expect((await addUsage(serviceId, 1)).period).toBe("2026-03-31")
    at("2026-04-29T23:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 1, reset_date: "2026-04-30" })
    at("2026-04-30T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 0, reset_date: "2026-05-31" })
    // a leap February: the period of Feb 2028 starts on the 29th
    expect((await addUsage(serviceId, 1, "2028-02")).period).toBe("2028-02-29")
  })

  test("never: one quota for the life of the service, reset_date null, one history entry", async () => {
    at("2026-05-01T00:00:00Z")
    const { serviceId, me } = await subscriber("never", "2026-04-10T16:00:00Z")
    expect(await addUsage(serviceId, 4000)).toMatchObject({ period: "2026-04-10", used_bytes: 4000 })
    expect(await current(me)).toMatchObject({ used_bytes: 4000, reset_date: null })
    at("2026-06-01T00:00:00Z")
    await addUsage(serviceId, 1000)
    expect(await current(me)).toMatchObject({ used_bytes: 5000, reset_date: null })
    at("2026-06-10T00:00:00Z")
    expect(await current(me)).toMatchObject({ used_bytes: 5000, reset_date: null })
    expect(await ok(me.vpn.bandwidthHistory())).toEqual([{ period: "2026-04-10", used_bytes: 5000, used_formatted: "4.88 KB" }])
    expect(await ok(me.vpn.bandwidthSummary())).toMatchObject({ total_used_bytes: 5000, current_month_bytes: 5000 })
  })
})

interface Entry {
  readonly public_key: string
  readonly enabled?: boolean
  readonly removed?: true
}

const poll = async (nodeToken: string, since?: number) => {
  const node = await typedClient(app, { token: nodeToken })
  const res = await ok(node.node.peers({ urlParams: since === undefined ? {} : { since: String(since) } }))
  return { data: res.data as ReadonlyArray<Entry>, revision: res.meta.revision }
}

/** a service of 1 GB on the kind, a server granting it, a downloaded peer */
const peerOf = async (usageReset: Reset, startsAt: string) => {
  const s = await subscriber(usageReset, startsAt, 1)
  const server = await makeServer(app, { planIds: [s.plan.planId] })
  await ok(s.me.vpn.wireguard({ path: { server: server.id } }))
  /** the raw download, for its refusals */
  const download = () => app.get(`/v1/servers/${server.id}/wireguard`, { token: s.user.token })
  /** a download that must answer 200 (else `ok` throws) */
  const downloaded = () => ok(s.me.vpn.wireguard({ path: { server: server.id } }))
  return { ...s, server, download, downloaded }
}

describe("the 423 of [D52] and the node's peers follow the period [D95] [D92]", () => {
  test("billing_day: over quota is 423 and enabled false until the service's day, not the 1st; then back, also through ?since=", async () => {
    at("2026-07-10T00:00:00Z")
    const a = await peerOf("billing_day", "2026-06-20T10:00:00Z")
    await addUsage(a.serviceId, GIB)
    const refused = await a.download()
    expect(refused.status).toBe(423)
    expect(refused.body).toEqual({ success: false, message: "Bandwidth limit exceeded." })
    const full = await poll(a.server.nodeToken)
    expect(full.data.map((p) => p.enabled)).toEqual([false])

    // a day without a period start for it: nothing to send
    at("2026-07-11T00:00:00Z")
    const quiet = await poll(a.server.nodeToken, full.revision)
    expect(quiet.data).toEqual([])
    at("2026-07-19T23:59:00Z")
    expect((await a.download()).status).toBe(423)
    const stillQuiet = await poll(a.server.nodeToken, quiet.revision)
    expect(stillQuiet.data).toEqual([])

    // the 20th: a new period; the node is told without a full fetch
    at("2026-07-20T00:00:00Z")
    expect(typeof (await a.downloaded())).toBe("string")
    const rolled = await poll(a.server.nodeToken, stillQuiet.revision)
    expect(rolled.data.map((p) => [p.public_key, p.enabled])).toEqual([[full.data[0]!.public_key, true]])
    expect((await poll(a.server.nodeToken)).data.map((p) => p.enabled)).toEqual([true])
  })

  test("billing_day: a cursor several days old (no poll on the rollover day) still gets the re-enabled peer", async () => {
    at("2026-07-25T00:00:00Z")
    const a = await peerOf("billing_day", "2026-05-27T10:00:00Z")
    await addUsage(a.serviceId, 2 * GIB)
    const full = await poll(a.server.nodeToken)
    expect(full.data.map((p) => p.enabled)).toEqual([false])
    at("2026-07-29T00:00:00Z")
    const rolled = await poll(a.server.nodeToken, full.revision)
    expect(rolled.data.map((p) => p.enabled)).toEqual([true])
  })

  test("billing_day clamped: a service started on the 31st rolls over on the last day of a 30-day month, for the node too", async () => {
    at("2026-09-15T00:00:00Z")
    const a = await peerOf("billing_day", "2026-08-31T10:00:00Z")
    await addUsage(a.serviceId, GIB)
    expect((await a.download()).status).toBe(423)
    at("2026-09-29T12:00:00Z")
    const before = await poll(a.server.nodeToken)
    expect(before.data.map((p) => p.enabled)).toEqual([false])
    at("2026-09-30T00:00:00Z")
    expect(typeof (await a.downloaded())).toBe("string")
    const rolled = await poll(a.server.nodeToken, before.revision)
    expect(rolled.data.map((p) => p.enabled)).toEqual([true])
  })

  test("never: over quota stays 423 and disabled across months", async () => {
    at("2026-10-05T00:00:00Z")
    const a = await peerOf("never", "2026-10-01T10:00:00Z")
    await addUsage(a.serviceId, GIB)
    expect((await a.download()).status).toBe(423)
    const before = await poll(a.server.nodeToken)
    at("2026-11-01T00:00:00Z")
    at("2026-12-03T00:00:00Z")
    expect((await a.download()).status).toBe(423)
    const after = await poll(a.server.nodeToken, before.revision)
    // a month started: the node gets every peer again, still disabled
    expect(after.data.map((p) => p.enabled)).toEqual([false])
    expect(await current(a.me)).toMatchObject({ used_bytes: GIB, reset_date: null, percentage: 100 })
  })

  test("monthly: over quota until the 1st, as before", async () => {
    at("2026-12-10T00:00:00Z")
    const a = await peerOf("monthly", "2026-11-20T10:00:00Z")
    await addUsage(a.serviceId, GIB)
    expect((await a.download()).status).toBe(423)
    const before = await poll(a.server.nodeToken)
    at("2026-12-20T00:00:00Z")
    expect((await a.download()).status).toBe(423)
    expect((await poll(a.server.nodeToken, before.revision)).data).toEqual([])
    at("2027-01-01T00:00:00Z")
    expect(typeof (await a.downloaded())).toBe("string")
    expect((await poll(a.server.nodeToken, before.revision)).data.map((p) => p.enabled)).toEqual([true])
  })

  test("a plan changing its reset kind sends every peer of its servers again", async () => {
    at("2027-01-10T00:00:00Z")
    const a = await peerOf("monthly", "2026-12-25T10:00:00Z")
    await addUsage(a.serviceId, GIB)
    const before = await poll(a.server.nodeToken)
    expect(before.data.map((p) => p.enabled)).toEqual([false])
    // billing_day from Dec 25: the period of Dec 25 - Jan 25 holds no usage yet
    await ok(admin.catalogAdmin.updatePlan({ path: { plan: a.plan.planId }, payload: { usage_reset: "billing_day" } }))
    const after = await poll(a.server.nodeToken, before.revision)
    expect(after.data.map((p) => p.enabled)).toEqual([true])
    expect(await current(a.me)).toMatchObject({ used_bytes: 0, reset_date: "2027-01-25" })
  })
})

describe("quota notices follow the period [D95] [D96]", () => {
  test("billing_day: the 80 % notice comes once per period, naming its start and the reset date", async () => {
    at("2027-02-05T00:00:00Z")
    const a = await peerOf("billing_day", "2027-01-12T10:00:00Z")
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${a.server.id}`
    const node = await typedClient(app, { token: a.server.nodeToken })
    // answered 200 (else `ok` throws)
    const report = (bytes: number) =>
      ok(node.node.usage({ payload: [{ public_key: peer!.public_key, rx_bytes: Math.round(bytes), tx_bytes: 0 }], headers: {} }))
    const notices = () => app.outbox.filter((m) => m.to === a.user.email && m.subject.includes("80 %"))
    await report(0.85 * GIB)
    await report(0.01 * GIB)
    await app.run(runJobsOnce)
    expect(notices()).toHaveLength(1)
    expect(notices()[0]!.text).toContain("2027-01-12")
    expect(notices()[0]!.text).toContain("resets on 2027-02-12")
    // the next period (Feb 12) starts counting again: one more notice, for it
    at("2027-02-12T00:00:00Z")
    await report(0.85 * GIB)
    await app.run(runJobsOnce)
    expect(notices()).toHaveLength(2)
    expect(notices()[1]!.text).toContain("2027-02-12")
    expect(notices()[1]!.text).toContain("resets on 2027-03-12")
  })
})
