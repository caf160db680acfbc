import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import jsQR from "jsqr"
import { PNG } from "pngjs"
import QRCode from "qrcode"
import { AppKey } from "../../src/platform/Crypto.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makeServer, makeService, nodePeersOf, openvpnAuthOf } from "./fixtures.ts"

// [D90]: devices, their limit, their configs and credentials.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

let counter = 0
/** a plan with `device_limit` (default 5) and a monthly cycle */
const planWithLimit = async (deviceLimit?: number) => {
  const [plan] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb, device_limit)
    values (${`Device plan ${++counter}`}, 'test', 100, ${deviceLimit ?? 5}) returning id`
  const [cycle] = await app.sql<{ id: number }>`
    insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${plan!.id}, 'Monthly', 30, '9.99', 'USD') returning id`
  return { planId: plan!.id, cycleId: cycle!.id }
}

/** a user with an active service on a plan of `deviceLimit`, granting a WireGuard and an OpenVPN server */
const member = async (deviceLimit?: number) => {
  const user = await app.createUser()
  const plan = await planWithLimit(deviceLimit)
  await makeService(app, user.id, plan)
  const wg = await makeServer(app, { planIds: [plan.planId] })
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
  return { user, plan, wg, ovpn }
}

const create = (token: string, body: unknown = { name: "Phone", platform: "ios" }) => app.post("/v1/devices", { token, body })
/** the user's typed client (issue 35) */
const clientOf = (token: string) => typedClient(app, { token })
const PHONE = { name: "Phone", platform: "ios" } as const
const privateKeyOf = (conf: string) => /^PrivateKey = (.+)$/m.exec(conf)![1]!
const addressOf = (conf: string) => /^Address = (.+)$/m.exec(conf)![1]!
const publicKeyOf = (conf: string) => KeyGen.publicKeyOf(privateKeyOf(conf))

describe("devices [D90]", () => {
  test("POST 201 with its OpenVPN credentials; GET lists oldest first without them; PUT renames; DELETE 200", async () => {
    const { user } = await member()
    const first = await create(user.token, { name: "Laptop", platform: "linux" })
    expect(first.status).toBe(201)
    expect(first.headers.get("cache-control")).toBe("no-store")
    expect(first.body.data).toEqual({
      id: expect.any(Number),
      name: "Laptop",
      platform: "linux",
      created_at: expect.any(String),
      openvpn: { username: expect.stringMatching(new RegExp(`^u${user.id}-[a-z0-9]{8}$`)), password: expect.stringMatching(/^[A-Za-z0-9]{32}$/) }
    })
    app.clock.advance(1000)
    const me = await clientOf(user.token)
    const second = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "android" } }))
    expect(second.openvpn.username).not.toBe(first.body.data.openvpn.username)

    const list = await ok(me.vpn.listDevices())
    expect(list).toEqual([
      // [D107]: each with its activity (none yet)
      {
        id: first.body.data.id,
        name: "Laptop",
        platform: "linux",
        created_at: new Date(first.body.data.created_at),
        last_handshake_at: null,
        online: false,
        period_bytes: 0,
        subscription_url: expect.stringMatching(/^http:\/\/localhost:3000\/s\//)
      },
      {
        id: second.id,
        name: "Phone",
        platform: "android",
        created_at: second.created_at,
        last_handshake_at: null,
        online: false,
        period_bytes: 0,
        subscription_url: expect.stringMatching(/^http:\/\/localhost:3000\/s\//)
      }
    ])

    const renamed = await ok(me.vpn.renameDevice({ path: { device: first.body.data.id }, payload: { name: "Work laptop" } }))
    expect(renamed).toEqual({ id: first.body.data.id, name: "Work laptop", platform: "linux", created_at: new Date(first.body.data.created_at) })

    const deleted = await app.del(`/v1/devices/${first.body.data.id}`, { token: user.token })
    expect(deleted.status).toBe(200)
    expect(deleted.body).toEqual({ success: true, message: "Device deleted.", data: {} })
    expect((await ok(me.vpn.listDevices())).map((d) => d.id)).toEqual([second.id])
    expect((await app.del(`/v1/devices/${first.body.data.id}`, { token: user.token })).status).toBe(404)
  })

  test("422 for a name outside 1-64 or an unknown platform; 401 without a token", async () => {
    const { user } = await member()
    const bad = await create(user.token, { name: "x".repeat(65), platform: "amiga" })
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({
      name: ["The name field must not be greater than 64 characters."],
      platform: ["The selected platform is invalid."]
    })
    const missing = await create(user.token, {})
    expect(missing.status).toBe(422)
    expect(Object.keys(missing.body.errors).sort()).toEqual(["name", "platform"])
    const me = await clientOf(user.token)
    const made = await ok(me.vpn.createDevice({ payload: PHONE }))
    const rename = await app.put(`/v1/devices/${made.id}`, { token: user.token, body: { name: "" } })
    expect(rename.status).toBe(422)
    expect(rename.body.errors).toEqual({ name: ["The name field is required."] })
    expect((await app.get("/v1/devices")).status).toBe(401)
    expect((await app.post("/v1/devices", { body: { name: "a", platform: "ios" } })).status).toBe(401)
  })

  test("another user's device is 404 on every device route", async () => {
    const owner = await member()
    const other = await member()
    const mine = await clientOf(owner.user.token)
    const device = (await ok(mine.vpn.createDevice({ payload: PHONE }))).id
    const t = other.user.token
    expect((await app.put(`/v1/devices/${device}`, { token: t, body: { name: "Mine" } })).status).toBe(404)
    expect((await app.del(`/v1/devices/${device}`, { token: t })).status).toBe(404)
    expect((await app.post(`/v1/devices/${device}/rotate`, { token: t })).status).toBe(404)
    expect((await app.get(`/v1/devices/${device}/wireguard/${other.wg.id}`, { token: t })).status).toBe(404)
    expect((await app.get(`/v1/devices/${device}/wireguard/${other.wg.id}/qr`, { token: t })).status).toBe(404)
    expect((await app.get(`/v1/devices/${device}/openvpn/${other.ovpn.id}`, { token: t })).status).toBe(404)
    expect((await app.get(`/v1/devices/999999/wireguard/${owner.wg.id}`, { token: owner.user.token })).status).toBe(404)
    expect(await ok(mine.vpn.listDevices())).toHaveLength(1)
  })

  test("creating beyond the plan's device_limit, or without a current service, is 422 Device limit reached.", async () => {
    const { user } = await member(2)
    const me = await clientOf(user.token)
    expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
    expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
    const third = await create(user.token)
    expect(third.status).toBe(422)
    expect(third.body).toEqual({ success: false, message: "Device limit reached." })

    const lonely = await app.createUser()
    const none = await create(lonely.token)
    expect(none.status).toBe(422)
    expect(none.body.message).toBe("Device limit reached.")
  })

  test("device_limit 0 is unlimited", async () => {
    const { user } = await member(0)
    const me = await clientOf(user.token)
    for (let i = 0; i < 7; i++) expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
  })

  test("twenty concurrent creations one short of the limit make exactly one device", async () => {
    const { user } = await member(3)
    const me = await clientOf(user.token)
    expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
    expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => create(user.token, { name: `Race ${i}`, platform: "other" })))
    expect(results.filter((r) => r.status === 201)).toHaveLength(1)
    const refused = results.filter((r) => r.status !== 201)
    expect(refused).toHaveLength(19)
    for (const r of refused) expect([r.status, r.body.message]).toEqual([422, "Device limit reached."])
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from vpn_devices where user_id = ${user.id}`
    expect(count!.n).toBe(3)
  })
})

describe("per-device configs [D90]", () => {
  test("each device has its own key and address on a server; same headers as [D52]", async () => {
    const { user, wg } = await member()
    const me = await clientOf(user.token)
    const a = (await ok(me.vpn.createDevice({ payload: { name: "A", platform: "ios" } }))).id
    const b = (await ok(me.vpn.createDevice({ payload: { name: "B", platform: "macos" } }))).id
    const ra = await app.get(`/v1/devices/${a}/wireguard/${wg.id}`, { token: user.token })
    const rb = await app.get(`/v1/devices/${b}/wireguard/${wg.id}`, { token: user.token })
    for (const r of [ra, rb]) {
      expect(r.status).toBe(200)
      expect(r.headers.get("content-type")).toBe("text/plain; charset=utf-8")
      expect(r.headers.get("content-disposition")).toMatch(/^attachment; filename="server-\d+\.conf"$/)
      expect(r.headers.get("cache-control")).toBe("no-store")
    }
    expect(privateKeyOf(ra.text)).not.toBe(privateKeyOf(rb.text))
    expect(addressOf(ra.text)).not.toBe(addressOf(rb.text))
    // the same config again
    expect(await ok(me.vpn.deviceWireguard({ path: { device: a, server: wg.id } }))).toBe(ra.text)
    const keys = (await nodePeersOf(app, wg.nodeToken)).filter((p) => p.enabled).map((p) => p.public_key)
    expect(keys).toEqual(expect.arrayContaining([publicKeyOf(ra.text), publicKeyOf(rb.text)]))
  })

  test("the rules of [D52]/[D53]: 404 unknown or other-protocol server, 403 not granted, 423 suspended", async () => {
    const { user, wg, ovpn } = await member()
    const me = await clientOf(user.token)
    const d = (await ok(me.vpn.createDevice({ payload: PHONE }))).id
    expect((await app.get(`/v1/devices/${d}/wireguard/${ovpn.id}`, { token: user.token })).status).toBe(404)
    expect((await app.get(`/v1/devices/${d}/openvpn/${wg.id}`, { token: user.token })).status).toBe(404)
    expect((await app.get(`/v1/devices/${d}/wireguard/999999`, { token: user.token })).status).toBe(404)
    const elsewhere = await makeServer(app, {})
    const denied = await app.get(`/v1/devices/${d}/wireguard/${elsewhere.id}`, { token: user.token })
    expect(denied.status).toBe(403)
    expect(denied.body.message).toBe("Your plan does not include this server.")
    const profile = await app.get(`/v1/devices/${d}/openvpn/${ovpn.id}`, { token: user.token })
    expect(profile.status).toBe(200)
    expect(profile.headers.get("content-disposition")).toMatch(/\.ovpn"$/)
    expect(profile.text).toBe(await ok(me.vpn.openvpn({ path: { server: ovpn.id } })))
    await app.sql`update services set status = 'suspended' where user_id = ${user.id}`
    const locked = await app.get(`/v1/devices/${d}/wireguard/${wg.id}`, { token: user.token })
    expect(locked.status).toBe(423)
    expect(locked.body.message).toBe("Service suspended.")
    expect((await app.get(`/v1/devices/${d}/wireguard/${wg.id}/qr`, { token: user.token })).status).toBe(423)
  })

  test("the QR code is an image/png of exactly the config text", async () => {
    const { user, wg } = await member()
    const me = await clientOf(user.token)
    const d = (await ok(me.vpn.createDevice({ payload: PHONE }))).id
    const conf = await ok(me.vpn.deviceWireguard({ path: { device: d, server: wg.id } }))
    const res = await app.fetch(
      new Request(`http://localhost:3000/v1/devices/${d}/wireguard/${wg.id}/qr`, {
        headers: { authorization: `Bearer ${user.token}` }
      })
    )
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("image/png")
    expect(res.headers.get("cache-control")).toBe("no-store")
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect([...bytes.slice(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
    const png = PNG.sync.read(Buffer.from(bytes))
    const decoded = jsQR(new Uint8ClampedArray(png.data), png.width, png.height)
    expect(decoded?.data).toBe(conf)
    // and it is the library's code of that text
    expect(QRCode.create(conf, { errorCorrectionLevel: "M" }).modules.size).toBe(decoded!.version * 4 + 17)
  })
})

describe("the spec's routes serve the default device [D90]", () => {
  test("the first download makes a Default device (platform other); it counts toward the limit", async () => {
    const { user, wg } = await member(2)
    const me = await clientOf(user.token)
    const conf = await ok(me.vpn.wireguard({ path: { server: wg.id } }))
    const list = await ok(me.vpn.listDevices())
    expect(list).toEqual([
      {
        id: expect.any(Number),
        name: "Default",
        platform: "other",
        created_at: expect.any(Date),
        last_handshake_at: null,
        online: false,
        period_bytes: 0,
        subscription_url: expect.any(String)
      }
    ])
    expect(await ok(me.vpn.deviceWireguard({ path: { device: list[0]!.id, server: wg.id } }))).toBe(conf)
    expect((await ok(me.vpn.createDevice({ payload: PHONE }))).name).toBe("Phone")
    expect((await create(user.token)).status).toBe(422)
  })

  test("the oldest device serves, even at a full limit; vpn-credentials are its credentials", async () => {
    const { user, wg, ovpn } = await member(1)
    const me = await clientOf(user.token)
    const made = await ok(me.vpn.createDevice({ payload: { name: "Only", platform: "windows" } }))
    const conf = await ok(me.vpn.wireguard({ path: { server: wg.id } }))
    expect(await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: wg.id } }))).toBe(conf)
    const creds = await ok(me.vpn.vpnCredentials())
    expect(creds.username).toBe(made.openvpn.username)
    expect(creds.password).toBe(made.openvpn.password)
    expect(await ok(me.vpn.listDevices())).toHaveLength(1)
    const node = await clientOf(ovpn.nodeToken)
    expect(await ok(node.node.openvpnAuth({ payload: { username: creds.username, password: creds.password } }))).toMatchObject({ allowed: true })
  })
})

describe("rotate and delete [D90]", () => {
  test("rotate: new OpenVPN secret and new WireGuard keys (addresses kept); the old ones stop working at once", async () => {
    const { user, wg, ovpn } = await member()
    const me = await clientOf(user.token)
    const made = await ok(me.vpn.createDevice({ payload: PHONE }))
    const other = await ok(me.vpn.createDevice({ payload: { name: "Other", platform: "linux" } }))
    const before = await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: wg.id } }))
    const otherConf = await ok(me.vpn.deviceWireguard({ path: { device: other.id, server: wg.id } }))
    const rotated = await app.post(`/v1/devices/${made.id}/rotate`, { token: user.token })
    expect(rotated.status).toBe(200)
    expect(rotated.headers.get("cache-control")).toBe("no-store")
    expect(rotated.body.data).toMatchObject({ id: made.id, name: made.name, platform: made.platform })
    expect(rotated.body.data.openvpn.username).toBe(made.openvpn.username)
    expect(rotated.body.data.openvpn.password).not.toBe(made.openvpn.password)
    expect((await openvpnAuthOf(app, ovpn.nodeToken, made.openvpn.username, made.openvpn.password)).status).toBe(403)
    const node = await clientOf(ovpn.nodeToken)
    expect(await ok(node.node.openvpnAuth({ payload: { username: made.openvpn.username, password: rotated.body.data.openvpn.password } }))).toMatchObject({
      allowed: true
    })

    const after = await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: wg.id } }))
    expect(privateKeyOf(after)).not.toBe(privateKeyOf(before))
    expect(addressOf(after)).toBe(addressOf(before))
    const keys = (await nodePeersOf(app, wg.nodeToken)).map((p) => p.public_key)
    expect(keys).not.toContain(publicKeyOf(before))
    expect(keys).toContain(publicKeyOf(after))
    // the other device is untouched
    expect(await ok(me.vpn.deviceWireguard({ path: { device: other.id, server: wg.id } }))).toBe(otherConf)
  })

  test("delete: its peers leave every server and its credentials are refused; its address is free again", async () => {
    const { user, wg, ovpn } = await member()
    const me = await clientOf(user.token)
    const made = await ok(me.vpn.createDevice({ payload: PHONE }))
    const conf = await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: wg.id } }))
    expect((await nodePeersOf(app, wg.nodeToken)).map((p) => p.public_key)).toContain(publicKeyOf(conf))
    expect(await ok(me.vpn.deleteDevice({ path: { device: made.id } }))).toBe("Device deleted.")
    expect((await nodePeersOf(app, wg.nodeToken)).map((p) => p.public_key)).not.toContain(publicKeyOf(conf))
    expect((await openvpnAuthOf(app, ovpn.nodeToken, made.openvpn.username, made.openvpn.password)).status).toBe(403)
    const next = await ok(me.vpn.createDevice({ payload: PHONE }))
    const again = await ok(me.vpn.deviceWireguard({ path: { device: next.id, server: wg.id } }))
    expect(addressOf(again)).toBe(addressOf(conf))
  })
})

describe("peers and credentials from before devices [D90]", () => {
  test("a peer and credentials inserted without a device land on the user's Default device (as migration 0007 moves them)", async () => {
    const { user, wg, ovpn } = await member()
    await app.sql`
      insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address)
      values (${user.id}, ${wg.id}, ${`legacy-${user.id}`}, 'v1:legacy', '10.66.200.2')`
    await app.sql`
      insert into vpn_credentials (user_id, username, secret_enc, secret_hash)
      values (${user.id}, ${`u${user.id}-legacy00`}, ${AppKey.make(new Uint8Array(32).fill(7)).encrypt("legacy-secret")}, 'legacy')`
    const me = await clientOf(user.token)
    const list = await ok(me.vpn.listDevices())
    expect(list).toEqual([
      {
        id: expect.any(Number),
        name: "Default",
        platform: "other",
        created_at: expect.any(Date),
        last_handshake_at: null,
        online: false,
        period_bytes: 0,
        subscription_url: expect.any(String)
      }
    ])
    const rows = await app.sql<{ peer: number; credentials: number }>`
      select (select device_id from wireguard_peers where user_id = ${user.id}) as peer,
             (select device_id from vpn_credentials where user_id = ${user.id}) as credentials`
    expect(rows[0]).toEqual({ peer: list[0]!.id, credentials: list[0]!.id })
    const creds = await ok(me.vpn.vpnCredentials())
    expect([creds.username, creds.password]).toEqual([`u${user.id}-legacy00`, "legacy-secret"])
    void ovpn
  })
})
