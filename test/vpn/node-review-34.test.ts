import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { watch } from "../support/node-rpc.ts"
import { makePlan, makeServer, makeService } from "./fixtures.ts"

// Issue 34 (the third review), the node routes: handshakes bounded by the server's clock, a usage
// report's deltas counted into the device's bytes, a plan's limit a change of its own peers only,
// and a replaced OpenVPN password named to the node (its sessions end).
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)
const unix = (date: Date) => Math.floor(date.getTime() / 1000)

/** a user on `plan` with a device and its peer on `server` */
const member = async (plan: { planId: number; cycleId: number }, server: { id: number }) => {
  const user = await app.createUser()
  await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  const device = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
  const conf = await ok(me.vpn.deviceWireguard({ path: { device: device.id, server: server.id } }))
  return { user, me, device, key: keyOf(conf) }
}

const deviceOf = async (token: string, id: number) => {
  const me = await typedClient(app, { token })
  return (await ok(me.vpn.listDevices())).find((d) => d.id === id)!
}

const since = async (token: string, revision: number) => {
  const node = await typedClient(app, { token })
  return ok(node.node.peers({ urlParams: { since: String(revision) } }))
}
const head = async (token: string) => {
  const node = await typedClient(app, { token })
  return (await ok(node.node.peers({ urlParams: {} }))).meta.revision
}
/** a WireGuard entry's key (an OpenVPN server's entries name usernames) */
const keyIn = (entry: object) => ("public_key" in entry ? entry.public_key : undefined)

describe("[D107] a handshake in the future (issue 34)", () => {
  test("is taken as the server's now: the device is online now and offline 181 s later, never ahead", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await member(plan, server)
    const now = app.clock.get()
    const ahead = unix(now) + 365 * 86_400
    const node = await typedClient(app, { token: server.nodeToken })
    const res = await ok(node.node.counters({ headers: {}, payload: [{ public_key: a.key, rx_total: 10, tx_total: 10, latest_handshake: ahead }] }))
    expect(res.accepted).toEqual(expect.any(Number))
    const seen = await deviceOf(a.user.token, a.device.id)
    expect(seen.online).toBe(true)
    expect(seen.last_handshake_at?.toISOString()).toBe(now.toISOString())
    app.clock.advance(181_000)
    expect((await deviceOf(a.user.token, a.device.id)).online).toBe(false)
    // a later true handshake still moves it on
    await ok(node.node.counters({ headers: {}, payload: [{ public_key: a.key, rx_total: 20, tx_total: 20, latest_handshake: unix(app.clock.get()) - 5 }] }))
    expect((await deviceOf(a.user.token, a.device.id)).online).toBe(true)
  })
})

describe("[D107][D94] POST /v1/node/usage counts into the device's period_bytes (issue 34)", () => {
  test("WireGuard and OpenVPN deltas, once per Idempotency-Key, as the service's bytes", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const a = await member(plan, server)
    const usage = (token: string, body: unknown, key: string) => app.post("/v1/node/usage", { token, body, headers: { "idempotency-key": key } })
    const wgNode = await typedClient(app, { token: server.nodeToken })
    const ovpnNode = await typedClient(app, { token: ovpn.nodeToken })
    const report = [{ public_key: a.key, rx_bytes: 1000, tx_bytes: 24 }]
    expect(await ok(wgNode.node.usage({ headers: { "idempotency-key": "u1" }, payload: report }))).toEqual({ accepted: 1 })
    expect(await ok(wgNode.node.usage({ headers: { "idempotency-key": "u1" }, payload: report }))).toEqual({ accepted: 1 })
    expect((await deviceOf(a.user.token, a.device.id)).period_bytes).toBe(1024)
    expect(a.device.openvpn.username).toEqual(expect.any(String))
    const ovpnReport = [{ username: a.device.openvpn.username, rx_bytes: 500, tx_bytes: 500 }]
    expect(await ok(ovpnNode.node.usage({ headers: { "idempotency-key": "u2" }, payload: ovpnReport }))).toEqual({ accepted: 1 })
    expect((await deviceOf(a.user.token, a.device.id)).period_bytes).toBe(2024)
    const detail = await ok(a.me.vpn.getDevice({ path: { device: a.device.id } }))
    expect(detail.servers.find((s) => s.server_id === ovpn.id)).toMatchObject({ rx_bytes: 500, tx_bytes: 500 })
    // the same bytes as the service's
    expect((await ok(a.me.vpn.currentBandwidth())).used_bytes).toBe(2024)
    // a refused report (past 2^53 - 1) counts nothing for the device either
    expect((await usage(server.nodeToken, [{ public_key: a.key, rx_bytes: Number.MAX_SAFE_INTEGER, tx_bytes: 0 }], "u3")).status).toBe(422)
    expect((await deviceOf(a.user.token, a.device.id)).period_bytes).toBe(2024)
  })
})

describe("[D103][D92] a plan's speed limit is a change of that plan's peers only (issue 34)", () => {
  test("?since= after plan A's change lists A's peers at the new speed, not plan B's", async () => {
    const planA = await makePlan(app, 0)
    const planB = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [planA.planId, planB.planId] })
    const other = await makeServer(app, { planIds: [planB.planId] })
    const a = await member(planA, server)
    const b = await member(planB, server)
    const from = await head(server.nodeToken)
    const fromOther = await head(other.nodeToken)
    const stream = watch(app, server.nodeToken, from)
    try {
      await stream.waitFor(() => true)
      const staff = await typedClient(app, { token: admin.token })
      expect((await ok(staff.catalogAdmin.updatePlan({ path: { plan: planA.planId }, payload: { speed_limit_mbps: 10 } }))).speed_limit_mbps).toBe(10)
      const changed = await since(server.nodeToken, from)
      expect(changed.data).toEqual([{ public_key: a.key, allowed_ips: expect.any(String), enabled: true, speed_limit_mbps: 10 }])
      expect(changed.data.map(keyIn)).not.toContain(b.key)
      // a server without plan A hears of nothing
      expect((await since(other.nodeToken, fromOther)).data).toEqual([])
      // the stream likewise
      const pushed = await stream.waitFor((batch) => batch.peers.length > 0)
      expect(pushed.peers.map((p) => ("public_key" in p ? p.public_key : ""))).toEqual([a.key])
    } finally {
      await stream.close()
    }
  })
})

describe("[D106] a replaced OpenVPN password is named to the node (issue 34)", () => {
  test("a device rotated: the username's entry with meta.rotated on ?since=, and rotated in the stream", async () => {
    const plan = await makePlan(app, 0)
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const wg = await makeServer(app, { planIds: [plan.planId] })
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    const device = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
    const username = device.openvpn.username
    const from = await head(ovpn.nodeToken)
    const fromWg = await head(wg.nodeToken)
    const stream = watch(app, ovpn.nodeToken, from)
    try {
      await stream.waitFor(() => true)
      expect((await ok(me.vpn.rotateDevice({ path: { device: device.id } }))).data.id).toBe(device.id)
      const changed = await since(ovpn.nodeToken, from)
      expect(changed.data).toEqual([{ username, enabled: true, speed_limit_mbps: null }])
      expect(changed.meta.rotated).toEqual([username])
      const pushed = await stream.waitFor((batch) => batch.rotated.length > 0)
      expect(pushed.rotated).toEqual([username])
      // nothing rotated since: no meta.rotated
      expect((await since(ovpn.nodeToken, changed.meta.revision)).meta).toEqual({ revision: changed.meta.revision })
      // a WireGuard server hears of no username
      expect((await since(wg.nodeToken, fromWg)).data.some((e) => "username" in e || String(keyIn(e)).includes(":"))).toBe(false)
    } finally {
      await stream.close()
    }
  })
})
