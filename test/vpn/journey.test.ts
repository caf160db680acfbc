import { afterAll, beforeAll, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
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

  const created = await app.post("/v1/admin/servers", {
    token: admin.token,
    body: { name: "Helsinki 1", country: "FI", city: "Helsinki", protocol: "wireguard", ip: "203.0.113.50", plan_ids: [plan.planId] }
  })
  expect(created.status).toBe(201)
  const { id, node_token, private_key } = created.body.data

  const list = await app.get("/v1/servers", { token: user.token })
  expect(list.body.data.map((s: { id: number }) => s.id)).toEqual([id])

  const conf = await app.get(`/v1/servers/${id}/wireguard`, { token: user.token })
  expect(conf.status).toBe(200)
  expect(conf.text).toContain(`PublicKey = ${KeyGen.publicKeyOf(private_key)}\n`)
  expect(conf.text).toContain("Endpoint = 203.0.113.50:51820\n")
  const clientKey = /^PrivateKey = (\S+)$/m.exec(conf.text)![1]!

  const peers = await app.get("/v1/node/peers", { token: node_token })
  expect(peers.body.data).toEqual([{ public_key: KeyGen.publicKeyOf(clientKey), allowed_ips: "10.66.0.2/32", enabled: true, speed_limit_mbps: null }])

  const before = await app.get("/v1/bandwidth/current", { token: user.token })
  expect(before.body.data.used_bytes).toBe(0)
  const half = 512 * 1024 ** 2
  const report = await app.post("/v1/node/usage", {
    token: node_token,
    body: [{ public_key: peers.body.data[0].public_key, rx_bytes: half, tx_bytes: 0 }]
  })
  expect(report.body.data.accepted).toBe(1)
  const after = await app.get("/v1/bandwidth/current", { token: user.token })
  expect(after.body.data).toMatchObject({ used_bytes: half, used_formatted: "512.00 MB", percentage: 50, limit_formatted: "1.00 GB" })

  await app.post("/v1/node/usage", { token: node_token, body: [{ public_key: peers.body.data[0].public_key, rx_bytes: 0, tx_bytes: half }] })
  const full = await app.get("/v1/bandwidth/current", { token: user.token })
  expect(full.body.data.percentage).toBe(100)
  const locked = await app.get(`/v1/servers/${id}/wireguard`, { token: user.token })
  expect(locked.status).toBe(423)
  expect(locked.body.message).toBe("Bandwidth limit exceeded.")
  const disabled = await app.get("/v1/node/peers", { token: node_token })
  expect(disabled.body.data[0].enabled).toBe(false)

  // next month the counter starts again
  app.clock.set(new Date("2026-02-01T00:00:00.000Z"))
  const reset = await app.get("/v1/node/peers", { token: node_token })
  expect(reset.body.data[0].enabled).toBe(true)
})
