import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "./fixtures.ts"

// [D107]: devices you can see: last handshake, online, bytes of the period, per device and per server.
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)
const unix = (date: Date) => Math.floor(date.getTime() / 1000)

/** a user with two devices, each with a peer on two WireGuard servers of their plan */
const setup = async () => {
  const plan = await makePlan(app, 0)
  const user = await app.createUser()
  await makeService(app, user.id, plan)
  const s1 = await makeServer(app, { planIds: [plan.planId], name: `Amsterdam ${Date.now()}` })
  const s2 = await makeServer(app, { planIds: [plan.planId], subnet: "10.67.0.0/16" })
  const me = await typedClient(app, { token: user.token })
  const phone = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
  const laptop = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
  const peer = async (device: { id: number }, server: { id: number }) => {
    const conf = await ok(me.vpn.deviceWireguard({ path: { device: device.id, server: server.id } }))
    return { key: keyOf(conf), address: /^Address = ([^/]+)/m.exec(conf)![1]! }
  }
  return { user, me, s1, s2, phone, laptop, phoneOn1: await peer(phone, s1), phoneOn2: await peer(phone, s2), laptopOn1: await peer(laptop, s1) }
}

/** a counters report through the typed client, answered with its decoded `data` */
const report = async (nodeToken: string, entries: Array<Record<string, unknown>>, key?: string) => {
  const node = await typedClient(app, { token: nodeToken })
  return ok(node.node.counters({ payload: entries, headers: key === undefined ? {} : { "idempotency-key": key } }))
}

/** the raw report, for refusals */
const reportRaw = (nodeToken: string, entries: Array<Record<string, unknown>>, key?: string) =>
  app.post("/v1/node/counters", { token: nodeToken, body: entries, ...(key === undefined ? {} : { headers: { "idempotency-key": key } }) })

describe("GET /v1/devices and /v1/devices/{device} [D107]", () => {
  test("last handshake, online within 180 s, bytes of the period in all and per server, counted once", async () => {
    const { laptop, laptopOn1, me, phone, phoneOn1, phoneOn2, s1, s2 } = await setup()
    const before = await ok(me.vpn.listDevices())
    expect(before.find((d) => d.id === phone.id)).toMatchObject({ last_handshake_at: null, online: false, period_bytes: 0 })

    const now = app.clock.get()
    const shake = unix(now) - 30
    expect(
      await report(
        s1.nodeToken,
        [
          { public_key: phoneOn1.key, rx_total: 1000, tx_total: 500, latest_handshake: shake },
          { public_key: laptopOn1.key, rx_total: 0, tx_total: 0, latest_handshake: 0 }
        ],
        "r1"
      )
    ).toEqual({ accepted: 2 })
    // the same report again (a retry): nothing added ([D94]); answered 200 (else `ok` throws)
    await report(
      s1.nodeToken,
      [
        { public_key: phoneOn1.key, rx_total: 1000, tx_total: 500, latest_handshake: shake },
        { public_key: laptopOn1.key, rx_total: 0, tx_total: 0, latest_handshake: 0 }
      ],
      "r1"
    )
    // the second server: the increase of cumulative totals counts
    await report(s2.nodeToken, [{ public_key: phoneOn2.key, rx_total: 100, tx_total: 0, latest_handshake: shake - 100 }], "r2")
    await report(s2.nodeToken, [{ public_key: phoneOn2.key, rx_total: 300, tx_total: 50, latest_handshake: shake - 60 }], "r3")

    const list = await ok(me.vpn.listDevices())
    const phoneItem = list.find((d) => d.id === phone.id)
    const laptopItem = list.find((d) => d.id === laptop.id)
    expect(phoneItem).toMatchObject({
      name: "Phone",
      platform: "ios",
      last_handshake_at: new Date(shake * 1000),
      online: true,
      period_bytes: 1000 + 500 + 300 + 50
    })
    expect(laptopItem).toMatchObject({ last_handshake_at: null, online: false, period_bytes: 0 })
    // the device's bytes are the service's bytes: the same reports, counted once
    const used = (await ok(me.vpn.currentBandwidth())).used_bytes
    expect(used).toBe(1850)

    const detail = await ok(me.vpn.getDevice({ path: { device: phone.id } }))
    expect(detail).toMatchObject({ id: phone.id, online: true, period_bytes: 1850 })
    expect<ReadonlyArray<unknown>>(detail.servers).toEqual([
      {
        server_id: s1.id,
        server_name: expect.stringContaining("Amsterdam"),
        address: phoneOn1.address,
        last_handshake_at: new Date(shake * 1000),
        rx_bytes: 1000,
        tx_bytes: 500
      },
      {
        server_id: s2.id,
        server_name: expect.any(String),
        address: phoneOn2.address,
        last_handshake_at: new Date((shake - 60) * 1000),
        rx_bytes: 300,
        tx_bytes: 50
      }
    ])

    // an older handshake in a later report does not move it back; 181 s later the device is offline
    await report(s1.nodeToken, [{ public_key: phoneOn1.key, rx_total: 1000, tx_total: 500, latest_handshake: shake - 500 }], "r4")
    app.clock.advance(181_000)
    const later = await ok(me.vpn.getDevice({ path: { device: phone.id } }))
    expect(later).toMatchObject({ online: false, last_handshake_at: new Date(shake * 1000) })
  })

  test("another user's device is 404; a handshake named by another server's node is not recorded ([D116])", async () => {
    const { me, phone, phoneOn1, s2, user } = await setup()
    const other = await app.createUser()
    expect((await app.get(`/v1/devices/${phone.id}`, { token: other.token })).status).toBe(404)
    expect((await app.get("/v1/devices/999999", { token: user.token })).status).toBe(404)
    // s2's node names a key of s1
    await report(s2.nodeToken, [{ public_key: phoneOn1.key, rx_total: 10, tx_total: 10, latest_handshake: unix(app.clock.get()) }])
    const item = (await ok(me.vpn.listDevices())).find((d) => d.id === phone.id)
    expect(item).toMatchObject({ last_handshake_at: null, online: false, period_bytes: 0 })
  })

  test("a latest_handshake that is not unix seconds: 422, nothing counted", async () => {
    const { me, phoneOn1, s1 } = await setup()
    for (const bad of [-1, 1.5, "yesterday"]) {
      const res = await reportRaw(s1.nodeToken, [{ public_key: phoneOn1.key, rx_total: 10, tx_total: 10, latest_handshake: bad }])
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["0.latest_handshake"])
    }
    expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(0)
  })
})

describe("GET /v1/admin/users/{user}/devices [D107]", () => {
  test("an admin sees the user's devices with their activity; a user may not", async () => {
    const { phone, phoneOn1, s1, user } = await setup()
    await report(s1.nodeToken, [{ public_key: phoneOn1.key, rx_total: 7, tx_total: 3, latest_handshake: unix(app.clock.get()) }])
    const staff = await typedClient(app, { token: admin.token })
    const devices = await ok(staff.vpnAdmin.userDevices({ path: { user: user.id } }))
    expect(devices.map((d) => d.name)).toEqual(["Phone", "Laptop"])
    expect(devices[0]).toMatchObject({ id: phone.id, online: true, period_bytes: 10 })
    expect((await app.get(`/v1/admin/users/${user.id}/devices`, { token: user.token })).status).toBe(403)
    expect((await app.get("/v1/admin/users/999999/devices", { token: admin.token })).status).toBe(404)
  })
})
