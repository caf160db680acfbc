import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { UsageRows } from "../../src/vpn/UsageRows.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "./fixtures.ts"
import { ServiceId } from "../../src/platform/Ids.ts"

// [D54] (rev. 2): byte counts are 64-bit in the database and safe integers in JSON. A report
// that would carry a stored total past 2^53 - 1 is refused whole before anything is saved, and
// no read of usage fails on a large total.
const MAX = Number.MAX_SAFE_INTEGER

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const period = () => `${app.clock.get().toISOString().slice(0, 7)}-01`

/** a total written through the room's repository, unchecked (as an operator's fix-up might) */
const addDirectly = (serviceId: number, rx: number, tx: number, month = period()) =>
  app.run(Effect.flatMap(UsageRows, (rows) => rows.add(ServiceId.make(serviceId), month, rx, tx)).pipe(Effect.provide(UsageRows.Default)))

const stored = async (serviceId: number) => {
  const rows = await app.sql<{ rx: string; tx: string }>`
    select rx_bytes::text as rx, tx_bytes::text as tx from usage_records where service_id = ${serviceId} and period = ${period()}::date`
  return rows[0] ? { rx: rows[0].rx, tx: rows[0].tx } : undefined
}

/** a user with an unlimited service, a server granting it and a downloaded peer */
const peerOwner = async (server?: { id: number; nodeToken: string }) => {
  const user = await app.createUser()
  const plan = await makePlan(app, 0)
  const serviceId = await makeService(app, user.id, plan)
  const node = server ?? (await makeServer(app, { planIds: [plan.planId] }))
  if (server) await app.sql`insert into server_plans (server_id, plan_id) values (${server.id}, ${plan.planId})`
  const me = await typedClient(app, { token: user.token })
  expect(await ok(me.vpn.wireguard({ path: { server: node.id } }))).toContain("[Interface]")
  const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where user_id = ${user.id}`
  return { user, me, serviceId, server: node, publicKey: peer!.public_key }
}

describe("POST /v1/node/usage past 2^53 - 1 [D54] (rev. 2)", () => {
  test("a report that would carry one service's month past the bound is refused whole (422 naming the entry), nothing saved", async () => {
    const a = await peerOwner()
    const b = await peerOwner(a.server)
    await addDirectly(a.serviceId, MAX - 20, 0)
    const res = await app.post("/v1/node/usage", {
      token: a.server.nodeToken,
      body: [
        { public_key: b.publicKey, rx_bytes: 100, tx_bytes: 100 },
        { public_key: a.publicKey, rx_bytes: 5, tx_bytes: 5 },
        { public_key: a.publicKey, rx_bytes: 5, tx_bytes: 6 }
      ]
    })
    expect(res.status).toBe(422)
    expect(res.body.success).toBe(false)
    expect(res.body.message).toBe("The given data was invalid.")
    expect(Object.keys(res.body.errors)).toEqual(["2.tx_bytes"])
    expect(res.body.errors["2.tx_bytes"][0]).toContain("2.tx_bytes")
    // nothing saved: neither the other service's entry nor the earlier ones
    expect(await stored(b.serviceId)).toBeUndefined()
    expect(await stored(a.serviceId)).toEqual({ rx: String(MAX - 20), tx: "0" })

    // exactly up to the bound is fine, and a retry of the refused report is still refused
    const node = await typedClient(app, { token: a.server.nodeToken })
    const fits = await ok(
      node.node.usage({
        headers: {},
        payload: [
          { public_key: a.publicKey, rx_bytes: 10, tx_bytes: 10 },
          { public_key: b.publicKey, rx_bytes: 1, tx_bytes: 0 }
        ]
      })
    )
    expect(fits).toEqual({ accepted: 2 })
    expect(await stored(a.serviceId)).toEqual({ rx: String(MAX - 10), tx: "10" })
    const again = await app.post("/v1/node/usage", { token: a.server.nodeToken, body: [{ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 0 }] })
    expect(again.status).toBe(422)
    expect(Object.keys(again.body.errors)).toEqual(["0.rx_bytes"])
    expect(await stored(a.serviceId)).toEqual({ rx: String(MAX - 10), tx: "10" })
  })

  test("entries of one report that together pass the bound on a fresh month are refused", async () => {
    const a = await peerOwner()
    const res = await app.post("/v1/node/usage", {
      token: a.server.nodeToken,
      body: [
        { public_key: a.publicKey, rx_bytes: MAX, tx_bytes: 0 },
        { public_key: a.publicKey, rx_bytes: 1, tx_bytes: 0 }
      ]
    })
    expect(res.status).toBe(422)
    expect(Object.keys(res.body.errors)).toEqual(["1.rx_bytes"])
    expect(await stored(a.serviceId)).toBeUndefined()
  })

  test("concurrent reports near the bound: exactly those that fit are counted, the total never passes it", async () => {
    const a = await peerOwner()
    await addDirectly(a.serviceId, MAX - 10, 0)
    const results = await Promise.all(
      Array.from({ length: 5 }, () => app.post("/v1/node/usage", { token: a.server.nodeToken, body: [{ public_key: a.publicKey, rx_bytes: 4, tx_bytes: 1 }] }))
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 200, 422, 422, 422])
    expect(await stored(a.serviceId)).toEqual({ rx: String(MAX - 2), tx: "2" })
  })

  test("counters above 2^53 - 1 or beyond any number in the JSON are 422, not 500", async () => {
    const a = await peerOwner()
    for (const raw of [
      `[{"public_key":"${a.publicKey}","rx_bytes":9007199254740993,"tx_bytes":0}]`,
      `[{"public_key":"${a.publicKey}","rx_bytes":18446744073709551616,"tx_bytes":0}]`,
      `[{"public_key":"${a.publicKey}","rx_bytes":1e400,"tx_bytes":0}]`
    ]) {
      const res = await app.post("/v1/node/usage", { token: a.server.nodeToken, raw })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["0.rx_bytes"])
    }
    expect(await stored(a.serviceId)).toBeUndefined()
  })
})

describe("POST /v1/admin/services/{service}/usage past 2^53 - 1 [D54] (rev. 2) [D70]", () => {
  const admin = () => app.createUser({ role: "admin" })

  test("an addition that would pass the bound is 422 errors.bytes and saves nothing (a retry does not count twice)", async () => {
    const { token } = await admin()
    const a = await peerOwner()
    await addDirectly(a.serviceId, MAX - 5, 0)
    for (let i = 0; i < 2; i++) {
      const res = await app.post(`/v1/admin/services/${a.serviceId}/usage`, { token, body: { bytes: 10 } })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["bytes"])
      expect(await stored(a.serviceId)).toEqual({ rx: String(MAX - 5), tx: "0" })
    }
    const staff = await typedClient(app, { token })
    const fits = await ok(staff.vpnAdmin.recordUsage({ path: { service: a.serviceId }, payload: { bytes: 5 } }))
    expect(fits.used_bytes).toBe(MAX)
  })

  test("bytes above 2^53 - 1 or beyond any number in the JSON are 422 errors.bytes, not 500", async () => {
    const { token } = await admin()
    const a = await peerOwner()
    for (const raw of ['{"bytes":9007199254740993}', '{"bytes":18446744073709551616}', '{"bytes":1e400}']) {
      const res = await app.post(`/v1/admin/services/${a.serviceId}/usage`, { token, raw })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["bytes"])
    }
    expect(await stored(a.serviceId)).toBeUndefined()
  })
})

describe("reads of a huge stored total [D54] (rev. 2) [D55]", () => {
  test("bandwidth routes answer 200 with safe integers; the node list answers 200", async () => {
    const a = await peerOwner()
    await addDirectly(a.serviceId, 2 ** 62, 2 ** 62)
    const lastMonth = new Date(app.clock.get().getTime())
    lastMonth.setUTCDate(1)
    lastMonth.setUTCMonth(lastMonth.getUTCMonth() - 1)
    await addDirectly(a.serviceId, MAX - 1, 0, lastMonth.toISOString().slice(0, 10))

    for (const usage of [await ok(a.me.vpn.currentBandwidth()), await ok(a.me.vpn.serviceBandwidth({ path: { service: a.serviceId } }))]) {
      expect(usage.used_bytes).toBe(MAX)
    }
    const history = await ok(a.me.vpn.bandwidthHistory())
    expect(history.map((e) => e.used_bytes)).toEqual([MAX, MAX - 1])
    const summary = await ok(a.me.vpn.bandwidthSummary())
    expect(summary.total_used_bytes).toBe(MAX)
    expect(summary.current_month_bytes).toBe(MAX)
    for (const n of [summary.total_used_bytes, summary.current_month_bytes]) {
      expect(Number.isSafeInteger(n)).toBe(true)
    }

    const node = await typedClient(app, { token: a.server.nodeToken })
    expect((await ok(node.node.peers({ urlParams: {} }))).data.length).toBeGreaterThan(0)
  })
})
