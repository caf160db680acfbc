import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { sha256Hex } from "../../src/platform/Crypto.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"
import { makePlan, makeService, SERVER_PUBLIC_KEY } from "./fixtures.ts"

// [D70] [D50]: servers and usage through the admin API.
let app: TestApp
let admin: { token: string }
/** the admin's typed client (issue 35) */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

const SERVER_KEYS = ["city", "country", "id", "ip", "name", "protocol", "status"]

describe("POST /v1/admin/servers [D70]", () => {
  test("201: the Server and its node token shown once; defaults of [D50]", async () => {
    const plan = await makePlan(app)
    const res = await app.post("/v1/admin/servers", {
      token: admin.token,
      body: { name: "Oslo 1", country: "NO", city: "Oslo", protocol: "wireguard", ip: "203.0.113.20", public_key: SERVER_PUBLIC_KEY, plan_ids: [plan.planId] }
    })
    expect(res.status).toBe(201)
    expect(res.headers.get("cache-control")).toBe("no-store")
    const { node_token, ...server } = res.body.data
    expect(server).toEqual({ id: server.id, name: "Oslo 1", country: "NO", city: "Oslo", protocol: "wireguard", ip: "203.0.113.20", status: "active" })
    expect(typeof node_token).toBe("string")
    const [row] = await app.sql<Record<string, unknown>>`
      select port, transport, subnet::text as subnet, dns, public_key, node_token_hash from servers where id = ${server.id}`
    expect(row).toEqual({
      port: 51820,
      transport: "udp",
      subnet: "10.66.0.0/16",
      dns: "1.1.1.1, 1.0.0.1",
      public_key: SERVER_PUBLIC_KEY,
      node_token_hash: sha256Hex(node_token)
    })
    // the token is stored only hashed and works on the node routes
    expect(JSON.stringify(await app.sql`select * from servers`)).not.toContain(node_token)
    const node = await typedClient(app, { token: node_token })
    expect((await ok(node.node.peers({ urlParams: {} }))).meta.revision).toEqual(expect.any(Number))
    const grants = await app.sql`select plan_id from server_plans where server_id = ${server.id}`
    expect(grants).toEqual([{ plan_id: plan.planId }])
  })

  test("OpenVPN defaults to port 1194 udp; port, transport, subnet, dns and status are taken", async () => {
    const ovpn = await ok(
      staff.vpnAdmin.createServer({
        payload: {
          name: "Rome 1",
          country: "IT",
          city: "Rome",
          protocol: "openvpn",
          ip: "203.0.113.21",
          ca_cert: "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----"
        }
      })
    )
    const [row] = await app.sql<{ port: number; transport: string }>`select port, transport from servers where id = ${ovpn.id}`
    expect(row).toEqual({ port: 1194, transport: "udp" })
    const custom = await ok(
      staff.vpnAdmin.createServer({
        payload: {
          name: "Rome 2",
          country: "IT",
          city: "Rome",
          protocol: "openvpn",
          ip: "2001:db8::1",
          port: 443,
          transport: "tcp",
          subnet: "10.9.8.7/24",
          dns: "9.9.9.9",
          status: "maintenance"
        }
      })
    )
    expect(custom.status).toBe("maintenance")
    const [c] = await app.sql`select port, transport, subnet::text as subnet, dns from servers where id = ${custom.id}`
    expect(c).toEqual({ port: 443, transport: "tcp", subnet: "10.9.8.0/24", dns: "9.9.9.9" })
  })

  test("a WireGuard server without a public key gets a generated pair; its private key is shown once", async () => {
    const res = await ok(staff.vpnAdmin.createServer({ payload: { name: "Bern 1", country: "CH", city: "Bern", protocol: "wireguard", ip: "203.0.113.22" } }))
    const [row] = await app.sql<{ public_key: string }>`select public_key from servers where id = ${res.id}`
    expect(KeyGen.publicKeyOf(res.private_key!)).toBe(row!.public_key)
  })

  test("422 for bad fields, unknown plans; 401 and 403 for others", async () => {
    const bad = await app.post("/v1/admin/servers", {
      token: admin.token,
      body: { name: "", country: "NO", protocol: "ipsec", ip: "300.1.1.1", port: 70000, subnet: "10.0.0.0/31", dns: "dns.example" }
    })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["city", "dns", "ip", "name", "port", "protocol", "subnet"])
    expect(bad.body.errors.city).toEqual(["The city field is required."])
    const plans = await app.post("/v1/admin/servers", {
      token: admin.token,
      body: { name: "X", country: "NO", city: "Oslo", protocol: "openvpn", ip: "203.0.113.30", plan_ids: [999999] }
    })
    expect(plans.status).toBe(422)
    expect(plans.body.errors).toEqual({ plan_ids: ["The selected plan ids is invalid."] })
    expect((await app.post("/v1/admin/servers", { body: {} })).status).toBe(401)
    const user = await app.createUser()
    const forbidden = await app.post("/v1/admin/servers", { token: user.token, body: {} })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body).toEqual({ success: false, message: "Forbidden." })
  })
})

describe("PUT /v1/admin/servers/{server} [D70]", () => {
  test("200 Server with the changes; plan_ids replace the grants; 404 for an unknown server", async () => {
    const a = await makePlan(app)
    const b = await makePlan(app)
    const created = await ok(
      staff.vpnAdmin.createServer({
        payload: { name: "Kyiv 1", country: "UA", city: "Kyiv", protocol: "wireguard", ip: "203.0.113.40", public_key: SERVER_PUBLIC_KEY, plan_ids: [a.planId] }
      })
    )
    const id = created.id
    // untyped: the exact keys on the wire are the point
    const res = await app.put(`/v1/admin/servers/${id}`, { token: admin.token, body: { name: "Kyiv 2", status: "offline", plan_ids: [b.planId], port: 51821 } })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual({ id, name: "Kyiv 2", country: "UA", city: "Kyiv", protocol: "wireguard", ip: "203.0.113.40", status: "offline" })
    expect(Object.keys(res.body.data).sort()).toEqual(SERVER_KEYS)
    expect(await app.sql`select plan_id from server_plans where server_id = ${id}`).toEqual([{ plan_id: b.planId }])
    const [row] = await app.sql`select port from servers where id = ${id}`
    expect(row).toEqual({ port: 51821 })
    expect((await app.put("/v1/admin/servers/999999", { token: admin.token, body: {} })).status).toBe(404)
    const invalid = await app.put(`/v1/admin/servers/${id}`, { token: admin.token, body: { ip: "nope" } })
    expect(invalid.status).toBe(422)
  })
})

describe("POST /v1/admin/services/{service}/usage [D70]", () => {
  test("201: adds bytes to this month, or to the given month", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app, 1)
    const serviceId = await makeService(app, user.id, plan)
    const first = await ok(staff.vpnAdmin.recordUsage({ path: { service: serviceId }, payload: { bytes: 1024 } }))
    expect(first).toEqual({ service_id: serviceId, period: "2026-01", used_bytes: 1024, used_formatted: "1.00 KB" })
    const second = await ok(staff.vpnAdmin.recordUsage({ path: { service: serviceId }, payload: { bytes: 1024 } }))
    expect(second.used_bytes).toBe(2048)
    const past = await ok(staff.vpnAdmin.recordUsage({ path: { service: serviceId }, payload: { bytes: 5, period: "2025-11" } }))
    expect(past).toMatchObject({ period: "2025-11", used_bytes: 5 })
    const me = await typedClient(app, { token: user.token })
    const current = await ok(me.vpn.currentBandwidth())
    expect(current.used_bytes).toBe(2048)
    const history = await ok(me.vpn.bandwidthHistory())
    expect(history.map((e) => e.period)).toEqual(["2026-01", "2025-11"])
  })

  test("422 for bad bytes or period; 404 for an unknown service", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    const serviceId = await makeService(app, user.id, plan)
    const bad = await app.post(`/v1/admin/services/${serviceId}/usage`, { token: admin.token, body: { bytes: -1, period: "2026-13" } })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["bytes", "period"])
    const missing = await app.post(`/v1/admin/services/${serviceId}/usage`, { token: admin.token, body: {} })
    expect(missing.body.errors).toEqual({ bytes: ["The bytes field is required."] })
    expect((await app.post("/v1/admin/services/999999/usage", { token: admin.token, body: { bytes: 1 } })).status).toBe(404)
  })
})
