import { afterAll, beforeAll, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makePlan, makeService } from "./fixtures.ts"

/**
 * Issue 5's "done when", through the API: an admin creates a WireGuard server, a user with
 * a plan downloads a config, the node lists the peer and reports usage, and the user's
 * bandwidth moves until the limit locks the downloads and disables the peer.
 */
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("admin server -> user config -> node peers and usage -> bandwidth moves -> limit reached", async () => {
  const admin = await app.createUser({ role: "admin" })
  const user = await app.createUser()
  const plan = await makePlan(app, 1)
  await makeService(app, user.id, plan)

  const staff = await typedClient(app, { token: admin.token })
  const me = await typedClient(app, { token: user.token })
  const created = await ok(
    staff.vpnAdmin.createServer({
      payload: { name: "Helsinki 1", country: "FI", city: "Helsinki", protocol: "wireguard", ip: "203.0.113.50", plan_ids: [plan.planId] }
    })
  )
  const { id, node_token, private_key } = created
  const node = await typedClient(app, { token: node_token })

  const list = await ok(me.vpn.listServers())
  expect(list.map((s) => s.id)).toEqual([id])

  const conf = await ok(me.vpn.wireguard({ path: { server: id } }))
  expect(conf).toContain(`PublicKey = ${KeyGen.publicKeyOf(private_key!)}\n`)
  expect(conf).toContain("Endpoint = 203.0.113.50:51820\n")
  const clientKey = /^PrivateKey = (\S+)$/m.exec(conf)![1]!
  const publicKey = KeyGen.publicKeyOf(clientKey)

  const peers = await ok(node.node.peers({ urlParams: {} }))
  expect(peers.data).toEqual([{ public_key: publicKey, allowed_ips: "10.66.0.2/32", enabled: true, speed_limit_mbps: null }])

  const before = await ok(me.vpn.currentBandwidth())
  expect(before.used_bytes).toBe(0)
  const half = 512 * 1024 ** 2
  const report = await ok(node.node.usage({ payload: [{ public_key: publicKey, rx_bytes: half, tx_bytes: 0 }], headers: {} }))
  expect(report.accepted).toBe(1)
  const after = await ok(me.vpn.currentBandwidth())
  expect(after).toMatchObject({ used_bytes: half, used_formatted: "512.00 MB", percentage: 50, limit_formatted: "1.00 GB" })

  await ok(node.node.usage({ payload: [{ public_key: publicKey, rx_bytes: 0, tx_bytes: half }], headers: {} }))
  const full = await ok(me.vpn.currentBandwidth())
  expect(full.percentage).toBe(100)
  const locked = await app.get(`/v1/servers/${id}/wireguard`, { token: user.token })
  expect(locked.status).toBe(423)
  expect(locked.body.message).toBe("Bandwidth limit exceeded.")
  const disabled = await ok(node.node.peers({ urlParams: {} }))
  expect(disabled.data[0]).toMatchObject({ enabled: false })

  // next month the counter starts again
  app.clock.set(new Date("2026-02-01T00:00:00.000Z"))
  const reset = await ok(node.node.peers({ urlParams: {} }))
  expect(reset.data[0]).toMatchObject({ enabled: true })
})
