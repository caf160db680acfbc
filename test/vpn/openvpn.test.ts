import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { AppKey, sha256Hex } from "../../src/platform/Crypto.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { GIB, makePlan, makeServer, makeService, setUsage, subscriber } from "./fixtures.ts"

// [D53]: OpenVPN profiles and the per-user VPN credentials.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const CA = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----"
const month = () => app.clock.get().toISOString().slice(0, 7)

describe("GET /v1/servers/{server}/openvpn [D53]", () => {
  test("200: the client profile with the inline CA, text/plain, .ovpn attachment, no-store", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeService(app, user.id, plan)
    const server = await makeServer(app, {
      protocol: "openvpn",
      name: "London 1",
      planIds: [plan.planId],
      caCert: CA,
      transport: "tcp",
      ip: "203.0.113.14",
      port: 443
    })
    const res = await app.get(`/v1/servers/${server.id}/openvpn`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="london-1.ovpn"')
    expect(res.headers.get("cache-control")).toBe("no-store")
    const lines = res.text.split("\n")
    for (const directive of [
      "client",
      "dev tun",
      "proto tcp",
      "remote 203.0.113.14 443",
      "auth-user-pass",
      "remote-cert-tls server",
      "nobind",
      "persist-key",
      "persist-tun"
    ]) {
      expect(lines).toContain(directive)
    }
    expect(res.text).toContain(`<ca>\n${CA}\n</ca>\n`)
    expect(lines[0]).toBe("client")
  })

  test("udp by default", async () => {
    const { user, server } = await subscriber(app, { protocol: "openvpn" })
    const me = await typedClient(app, { token: user.token })
    const profile = await ok(me.vpn.openvpn({ path: { server: server.id } }))
    expect(profile.split("\n")).toContain("proto udp")
    expect(profile.split("\n")).toContain("remote 198.51.100.10 1194")
  })

  test("404 for an unknown server or a WireGuard server", async () => {
    const { user, plan } = await subscriber(app, { protocol: "openvpn" })
    const wg = await makeServer(app, { planIds: [plan.planId] })
    for (const id of ["424242", "x", String(wg.id)]) {
      const res = await app.get(`/v1/servers/${id}/openvpn`, { token: user.token })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
  })

  test("403 outside the plan or without a service", async () => {
    const { server } = await subscriber(app, { protocol: "openvpn" })
    const other = await subscriber(app)
    const nobody = await app.createUser()
    for (const user of [other.user, nobody]) {
      const res = await app.get(`/v1/servers/${server.id}/openvpn`, { token: user.token })
      expect(res.status).toBe(403)
      expect(res.body).toEqual({ success: false, message: "Your plan does not include this server." })
    }
  })

  test("423 for a suspended service and over the limit", async () => {
    const suspended = await subscriber(app, { protocol: "openvpn", status: "suspended" })
    const res = await app.get(`/v1/servers/${suspended.server.id}/openvpn`, { token: suspended.user.token })
    expect(res.status).toBe(423)
    expect(res.body).toEqual({ success: false, message: "Service suspended." })
    const full = await subscriber(app, { protocol: "openvpn", limitGb: 2 })
    await setUsage(app, full.serviceId, month(), 2 * GIB)
    const res2 = await app.get(`/v1/servers/${full.server.id}/openvpn`, { token: full.user.token })
    expect(res2.status).toBe(423)
    expect(res2.body).toEqual({ success: false, message: "Bandwidth limit exceeded." })
  })
})

describe("VPN credentials [D53]", () => {
  test("GET makes a stable username and a secret, no-store; the secret is stored encrypted and hashed", async () => {
    const user = await app.createUser()
    const first = await app.get("/v1/account/vpn-credentials", { token: user.token })
    expect(first.status).toBe(200)
    expect(first.headers.get("cache-control")).toBe("no-store")
    const { username, password } = first.body.data
    expect(username).toMatch(new RegExp(`^u${user.id}-[a-z0-9]{8}$`))
    expect(password).toMatch(/^[A-Za-z0-9]{32}$/)
    expect(first.body.data.secret).toBe(password)
    const me = await typedClient(app, { token: user.token })
    const again = await ok(me.vpn.vpnCredentials())
    expect(again.username).toBe(username)
    expect(again.password).toBe(password)
    const [row] = await app.sql<{ secret_enc: string; secret_hash: string }>`select secret_enc, secret_hash from vpn_credentials where user_id = ${user.id}`
    expect(row!.secret_enc).not.toContain(password)
    expect(AppKey.make(new Uint8Array(32).fill(7)).decrypt(row!.secret_enc)).toBe(password)
    expect(row!.secret_hash).toBe(sha256Hex(password))
  })

  test("rotate keeps the username, replaces the secret; the node refuses the old one at once", async () => {
    const { user, server } = await subscriber(app, { protocol: "openvpn" })
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: server.nodeToken })
    const before = await ok(me.vpn.vpnCredentials())
    const auth = (password: string) => app.post("/v1/node/openvpn/auth", { token: server.nodeToken, body: { username: before.username, password } })
    expect(await ok(node.node.openvpnAuth({ payload: { username: before.username, password: before.password } }))).toMatchObject({ allowed: true })
    const rotated = await app.post("/v1/account/vpn-credentials/rotate", { token: user.token })
    expect(rotated.status).toBe(200)
    expect(rotated.headers.get("cache-control")).toBe("no-store")
    expect(rotated.body.message).toBe("VPN credentials rotated.")
    expect(rotated.body.data.username).toBe(before.username)
    expect(rotated.body.data.password).not.toBe(before.password)
    const old = await auth(before.password)
    expect(old.status).toBe(403)
    expect(await ok(node.node.openvpnAuth({ payload: { username: before.username, password: rotated.body.data.password } }))).toMatchObject({
      allowed: true
    })
    const shown = await ok(me.vpn.vpnCredentials())
    expect(shown.password).toBe(rotated.body.data.password)
  })

  test("rotate before any GET makes credentials", async () => {
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    const res = await ok(me.vpn.rotateVpnCredentials())
    expect(res.data.username).toMatch(new RegExp(`^u${user.id}-`))
  })

  test("401 without a token", async () => {
    expect((await app.get("/v1/account/vpn-credentials")).status).toBe(401)
    expect((await app.post("/v1/account/vpn-credentials/rotate")).status).toBe(401)
  })
})
