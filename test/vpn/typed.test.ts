import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient, type TypedClient } from "../support/typed.ts"
import { GIB, SERVER_PUBLIC_KEY } from "./fixtures.ts"

// The VPN room's main flows through the typed client (issue 24): an admin sets up servers for a
// plan ([D50] [D70]); the user lists servers, downloads configs ([D52] [D53]), manages devices
// ([D90] [D107]) and reads bandwidth after the admin records usage ([D55]).
let app: TestApp
let admin: TypedClient
let setup: Awaited<ReturnType<typeof world>>
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"

const world = async () => {
  const plan = await ok(admin.catalogAdmin.createPlan({ payload: { name: "Typed VPN", bandwidth_limit_gb: 10, device_limit: 5 } }))
  const cycle = await ok(
    admin.catalogAdmin.createCycle({ path: { plan: plan.id }, payload: { name: "Monthly", duration_days: 30, price: 500, currency: "USD" } })
  )
  const wg = await ok(
    admin.vpnAdmin.createServer({
      payload: {
        name: "Typed WG",
        country: "NL",
        city: "Amsterdam",
        protocol: "wireguard",
        ip: "198.51.100.20",
        public_key: SERVER_PUBLIC_KEY,
        plan_ids: [plan.id]
      }
    })
  )
  const ovpn = await ok(
    admin.vpnAdmin.createServer({
      payload: { name: "Typed OVPN", country: "DE", city: "Berlin", protocol: "openvpn", ip: "198.51.100.21", ca_cert: CA, plan_ids: [plan.id] }
    })
  )
  const userAccount = await app.createUser()
  const service = await ok(admin.servicesAdmin.grantService({ path: { user: userAccount.id }, payload: { plan_id: plan.id, cycle_id: cycle.id } }))
  const me = await typedClient(app, { token: userAccount.token })
  return { plan, wg, ovpn, user: userAccount, service, me }
}

beforeAll(async () => {
  app = await makeTestApp()
  admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  setup = await world()
})
afterAll(() => app.dispose())

test("admin: servers created with their node token once, listed, read, updated [D50] [D54] [D70]", async () => {
  const { ovpn, plan, wg } = setup
  expect(wg).toMatchObject({ name: "Typed WG", protocol: "wireguard", ip: "198.51.100.20", status: "active" })
  expect(wg.node_token.length).toBeGreaterThan(20)
  expect(wg.private_key).toBeUndefined()

  const page = await ok(admin.vpnAdmin.listServers({ urlParams: {} }))
  expect(page.data.map((server) => server.id).sort()).toEqual([wg.id, ovpn.id].sort())
  const detail = await ok(admin.vpnAdmin.getServer({ path: { server: wg.id } }))
  expect(detail).toMatchObject({ id: wg.id, port: 51820, transport: "udp", public_key: SERVER_PUBLIC_KEY, plan_ids: [plan.id], peers: 0, last_seen_at: null })
  expect((await ok(admin.vpnAdmin.getServer({ path: { server: ovpn.id } }))).port).toBe(1194)

  const renamed = await ok(admin.vpnAdmin.updateServer({ path: { server: ovpn.id }, payload: { city: "Frankfurt" } }))
  expect(renamed).toMatchObject({ id: ovpn.id, name: "Typed OVPN", city: "Frankfurt", protocol: "openvpn" })
})

test("user: servers of the plan, WireGuard and OpenVPN downloads, credentials [D51] [D52] [D53]", async () => {
  const { me, ovpn, wg } = setup
  const servers = await ok(me.vpn.listServers())
  expect(servers.map((server) => server.name).sort()).toEqual(["Typed OVPN", "Typed WG"])
  expect(await ok(me.vpn.getServer({ path: { server: wg.id } }))).toEqual({
    id: wg.id,
    name: "Typed WG",
    country: "NL",
    city: "Amsterdam",
    protocol: "wireguard",
    ip: "198.51.100.20",
    status: "active"
  })

  const conf = await ok(me.vpn.wireguard({ path: { server: wg.id } }))
  expect(conf).toContain("[Interface]")
  expect(conf).toContain(`PublicKey = ${SERVER_PUBLIC_KEY}`)
  expect(conf).toContain("Endpoint = 198.51.100.20:51820")

  const credentials = await ok(me.vpn.vpnCredentials())
  expect(credentials.username.length).toBeGreaterThan(0)
  const profile = await ok(me.vpn.openvpn({ path: { server: ovpn.id } }))
  expect(profile).toContain("remote 198.51.100.21 1194")
  expect(profile).toContain("MIIB")

  const rotated = await ok(me.vpn.rotateVpnCredentials())
  expect(rotated.data.username).toBe(credentials.username)
  expect(rotated.data.password).not.toBe(credentials.password)

  // a server no plan of the user grants: 403 as its declared class ([D52])
  const other = await ok(
    admin.vpnAdmin.createServer({
      payload: { name: "Elsewhere", country: "US", city: "NYC", protocol: "wireguard", ip: "198.51.100.22", public_key: SERVER_PUBLIC_KEY }
    })
  )
  expect((await fails(me.vpn.getServer({ path: { server: other.id } })))._tag).toBe("PlanExcludesServer")
})

test("devices: create, list, detail, rename, per-device configs and QR, rotate, delete; admin sees them [D90] [D107]", async () => {
  const { me, ovpn, user, wg } = setup
  const laptop = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
  expect(laptop).toMatchObject({ name: "Laptop", platform: "linux" })
  expect(laptop.openvpn.password.length).toBeGreaterThan(0)

  const listed = await ok(me.vpn.listDevices())
  const mine = listed.find((device) => device.id === laptop.id)
  expect(mine).toMatchObject({ name: "Laptop", platform: "linux", online: false, last_handshake_at: null, period_bytes: 0 })

  const conf = await ok(me.vpn.deviceWireguard({ path: { device: laptop.id, server: wg.id } }))
  expect(conf).toContain("Endpoint = 198.51.100.20:51820")
  const qr = await ok(me.vpn.deviceWireguardQr({ path: { device: laptop.id, server: wg.id } }))
  expect([...qr.slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47])
  const profile = await ok(me.vpn.deviceOpenvpn({ path: { device: laptop.id, server: ovpn.id } }))
  expect(profile).toContain("remote 198.51.100.21 1194")

  const detail = await ok(me.vpn.getDevice({ path: { device: laptop.id } }))
  expect(detail.servers.find((server) => server.server_id === wg.id)).toMatchObject({ server_name: "Typed WG", rx_bytes: 0, tx_bytes: 0 })
  expect(detail.servers.find((server) => server.server_id === wg.id)?.address).toMatch(/^10\.66\./)

  expect(await ok(me.vpn.renameDevice({ path: { device: laptop.id }, payload: { name: "Work laptop" } }))).toMatchObject({ id: laptop.id, name: "Work laptop" })
  const rotated = await ok(me.vpn.rotateDevice({ path: { device: laptop.id } }))
  expect(rotated.data.id).toBe(laptop.id)
  expect(rotated.data.openvpn.password).not.toBe(laptop.openvpn.password)

  const seenByAdmin = await ok(admin.vpnAdmin.userDevices({ path: { user: user.id } }))
  expect(seenByAdmin.find((device) => device.id === laptop.id)?.name).toBe("Work laptop")

  expect(typeof (await ok(me.vpn.deleteDevice({ path: { device: laptop.id } })))).toBe("string")
  expect((await ok(me.vpn.listDevices())).map((device) => device.id)).not.toContain(laptop.id)
  expect((await fails(me.vpn.getDevice({ path: { device: laptop.id } })))._tag).toBe("NotFound")
})

test("bandwidth: admin records usage; current, per service, history and summary [D55]", async () => {
  const { me, service } = setup
  const recorded = await ok(admin.vpnAdmin.recordUsage({ path: { service: service.id }, payload: { bytes: 2 * GIB } }))
  expect(recorded).toMatchObject({ service_id: service.id, used_bytes: 2 * GIB, used_formatted: "2.00 GB" })

  const current = await ok(me.vpn.currentBandwidth())
  expect(current).toMatchObject({
    used_bytes: 2 * GIB,
    limit_bytes: 10 * GIB,
    unlimited: false,
    percentage: 20,
    throttled: false,
    used_formatted: "2.00 GB",
    limit_formatted: "10.00 GB"
  })
  expect(await ok(me.vpn.serviceBandwidth({ path: { service: service.id } }))).toEqual(current)

  const history = await ok(me.vpn.bandwidthHistory())
  expect(history[0]).toEqual({ period: recorded.period, used_bytes: 2 * GIB, used_formatted: "2.00 GB" })
  expect(await ok(me.vpn.bandwidthSummary())).toEqual({
    total_used_bytes: 2 * GIB,
    total_used_formatted: "2.00 GB",
    current_month_bytes: 2 * GIB,
    current_month_formatted: "2.00 GB"
  })
})

test("revoke all VPN access: the OpenVPN password is replaced [D90] [D91]", async () => {
  const { me } = setup
  const before = await ok(me.vpn.vpnCredentials())
  expect(typeof (await ok(me.vpn.revokeVpnAccess()))).toBe("string")
  const after = await ok(me.vpn.vpnCredentials())
  expect(after.username).toBe(before.username)
  expect(after.password).not.toBe(before.password)
})
