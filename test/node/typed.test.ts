import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { SERVER_PUBLIC_KEY } from "../vpn/fixtures.ts"

// The node routes through the typed client (issue 24), called with the node tokens an admin got
// when creating the servers: the peer list and its cursor ([D54] [D92]), usage deltas and
// cumulative counters counted once per Idempotency-Key ([D94]), the OpenVPN login check ([D106]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("peers, usage, counters and the OpenVPN check through a node's typed client [D54] [D92] [D94] [D103] [D106]", async () => {
  const admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  const plan = await ok(admin.catalogAdmin.createPlan({ payload: { name: "Typed Node", bandwidth_limit_gb: 50, speed_limit_mbps: 40 } }))
  const cycle = await ok(
    admin.catalogAdmin.createCycle({ path: { plan: plan.id }, payload: { name: "Monthly", duration_days: 30, price: 500, currency: "USD" } })
  )
  const wg = await ok(
    admin.vpnAdmin.createServer({
      payload: {
        name: "Node WG",
        country: "NL",
        city: "Amsterdam",
        protocol: "wireguard",
        ip: "198.51.100.30",
        public_key: SERVER_PUBLIC_KEY,
        plan_ids: [plan.id]
      }
    })
  )
  const ovpn = await ok(
    admin.vpnAdmin.createServer({
      payload: {
        name: "Node OVPN",
        country: "NL",
        city: "Amsterdam",
        protocol: "openvpn",
        ip: "198.51.100.31",
        ca_cert: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        plan_ids: [plan.id]
      }
    })
  )
  const user = await app.createUser()
  await ok(admin.servicesAdmin.grantService({ path: { user: user.id }, payload: { plan_id: plan.id, cycle_id: cycle.id } }))
  const me = await typedClient(app, { token: user.token })
  const device = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
  const conf = await ok(me.vpn.deviceWireguard({ path: { device: device.id, server: wg.id } }))
  const address = /Address = ([0-9.]+)\/32/.exec(conf)?.[1]

  // the WireGuard node sees the device's peer, shaped to the plan's speed
  const wgNode = await typedClient(app, { token: wg.node_token })
  const first = await ok(wgNode.node.peers({ urlParams: {} }))
  const peers = first.data.filter((entry) => "public_key" in entry && "allowed_ips" in entry)
  expect(peers.length).toBe(1)
  const peer = peers[0]!
  expect(peer).toMatchObject({ allowed_ips: `${address}/32`, enabled: true, speed_limit_mbps: 40 })
  expect(first.meta.revision).toBeGreaterThan(0)
  // nothing changed since that revision
  expect((await ok(wgNode.node.peers({ urlParams: { since: String(first.meta.revision) } }))).data).toEqual([])
  if (!("public_key" in peer)) throw new Error("not a peer")

  // deltas, then the same report again under its key: counted once
  const report = { payload: [{ public_key: peer.public_key, rx_bytes: 1000, tx_bytes: 24 }], headers: { "idempotency-key": "typed-report-1" } }
  expect(await ok(wgNode.node.usage(report))).toEqual({ accepted: 1 })
  expect(await ok(wgNode.node.usage(report))).toEqual({ accepted: 1 })
  expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(1024)

  // cumulative counters: the first report sets the base, the next one's increase counts
  await ok(
    wgNode.node.counters({ payload: [{ public_key: peer.public_key, rx_total: 5000, tx_total: 0 }], headers: { "idempotency-key": "typed-counters-1" } })
  )
  const before = (await ok(me.vpn.currentBandwidth())).used_bytes
  expect(
    await ok(
      wgNode.node.counters({ payload: [{ public_key: peer.public_key, rx_total: 5100, tx_total: 28 }], headers: { "idempotency-key": "typed-counters-2" } })
    )
  ).toEqual({ accepted: 1 })
  expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(before + 128)

  // the OpenVPN node checks the device's login; a wrong password is the declared Forbidden
  const ovpnNode = await typedClient(app, { token: ovpn.node_token })
  expect(await ok(ovpnNode.node.openvpnAuth({ payload: { username: device.openvpn.username, password: device.openvpn.password } }))).toEqual({
    username: device.openvpn.username,
    allowed: true,
    speed_limit_mbps: 40
  })
  expect((await fails(ovpnNode.node.openvpnAuth({ payload: { username: device.openvpn.username, password: "wrong-password" } })))._tag).toBe("Forbidden")
})
