import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { GIB, makePlan, makeServer, makeService, setUsage, subscriber } from "./fixtures.ts"

// Issue 27: the spec's WireGuard download reads the default device and its peer in one statement
// once both exist; the file, its headers and which device and peer it is stay as they were ([D52], [D90]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const peersOf = (userId: number) =>
  app.sql<{ device_id: number; server_id: number; address: string }>`
    select device_id, server_id, host(address) as address from wireguard_peers where user_id = ${userId} order by id`
const devicesOf = (userId: number) => app.sql<{ id: number; name: string }>`select id, name from vpn_devices where user_id = ${userId} order by created_at, id`

describe("GET /v1/servers/{server}/wireguard: the default device's peer (issue 27, [D52], [D90])", () => {
  test("the first download makes the default device and its peer; the next ones return the same file and headers", async () => {
    const { server, user } = await subscriber(app)
    const first = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(first.status).toBe(200)
    const again = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(again.status).toBe(200)
    expect(again.text).toBe(first.text)
    for (const name of ["content-type", "content-disposition", "cache-control"]) {
      expect(again.headers.get(name)).toBe(first.headers.get(name))
    }
    expect(again.headers.get("cache-control")).toBe("no-store")
    const devices = await devicesOf(user.id)
    expect(devices.map((d) => d.name)).toEqual(["Default"])
    expect(await peersOf(user.id)).toEqual([{ device_id: devices[0]!.id, server_id: server.id, address: "10.66.0.2" }])
  })

  test("a default device without a peer on this server gets one there; no second device", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeService(app, user.id, plan)
    const one = await makeServer(app, { planIds: [plan.planId], subnet: "10.70.0.0/16" })
    const two = await makeServer(app, { planIds: [plan.planId], subnet: "10.71.0.0/16" })
    const me = await typedClient(app, { token: user.token })
    expect(typeof (await ok(me.vpn.wireguard({ path: { server: one.id } })))).toBe("string")
    const res = await ok(me.vpn.wireguard({ path: { server: two.id } }))
    expect(res).toContain("Address = 10.71.0.2/32")
    const devices = await devicesOf(user.id)
    expect(devices).toHaveLength(1)
    expect((await peersOf(user.id)).map((p) => [p.device_id, p.server_id])).toEqual([
      [devices[0]!.id, one.id],
      [devices[0]!.id, two.id]
    ])
    expect(await ok(me.vpn.wireguard({ path: { server: two.id } }))).toBe(res)
  })

  test("the oldest device is the default: a device added later keeps its own peer", async () => {
    const { server, user } = await subscriber(app)
    const me = await typedClient(app, { token: user.token })
    const first = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const made = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
    const phone = await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: server.id } }))
    expect(phone).not.toBe(first)
    expect(await ok(me.vpn.wireguard({ path: { server: server.id } }))).toBe(first)
  })

  test("another user's peer is never the caller's", async () => {
    const { server, user, plan } = await subscriber(app)
    const other = await app.createUser()
    await makeService(app, other.id, plan)
    const me = await typedClient(app, { token: user.token })
    const they = await typedClient(app, { token: other.token })
    const mine = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const theirs = await ok(they.vpn.wireguard({ path: { server: server.id } }))
    expect(theirs).not.toBe(mine)
    expect(theirs).toContain("Address = 10.66.0.3/32")
  })

  test("the answers keep their order in the one read: 404, then 403, then 423 ([D11], [D95])", async () => {
    const { server, user, serviceId, plan } = await subscriber(app, { limitGb: 1 })
    const elsewhere = await makeServer(app, { subnet: "10.72.0.0/16" })
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    await setUsage(app, serviceId, app.clock.get().toISOString().slice(0, 7), GIB)
    await app.sql`update services set status = 'suspended' where id = ${serviceId}`
    const get = (id: number) => app.get(`/v1/servers/${id}/wireguard`, { token: user.token })
    expect((await get(999_999)).status).toBe(404)
    expect((await get(ovpn.id)).status).toBe(404)
    expect((await get(elsewhere.id)).text).toBe(JSON.stringify({ success: false, message: "Your plan does not include this server." }))
    expect((await get(server.id)).text).toBe(JSON.stringify({ success: false, message: "Service suspended." }))
    await app.sql`update services set status = 'active' where id = ${serviceId}`
    const over = await get(server.id)
    expect(over.status).toBe(423)
    expect(over.text).toBe(JSON.stringify({ success: false, message: "Bandwidth limit exceeded." }))
    await setUsage(app, serviceId, app.clock.get().toISOString().slice(0, 7), GIB - 1)
    expect((await get(server.id)).status).toBe(200)
    expect(await devicesOf(user.id)).toHaveLength(1)
  })
})
