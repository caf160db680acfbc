import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { makePlan, makeService, SERVER_PUBLIC_KEY } from "./fixtures.ts"

// [D92]: admins see each server with last_seen_at, peers and plan_ids; [D90]: subnet6 (IPv6 dual stack).
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
let adm: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  adm = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

const base = { name: "Dual", country: "NL", city: "Amsterdam", protocol: "wireguard", ip: "198.51.100.20", public_key: SERVER_PUBLIC_KEY } as const

/** a server through the typed client (its 201) */
const createServer = (body: { readonly plan_ids?: ReadonlyArray<number>; readonly subnet?: string; readonly subnet6?: string | null }) =>
  ok(adm.vpnAdmin.createServer({ payload: { ...base, ...body } }))

/** the raw request, for refusals */
const createServerRaw = (body: Record<string, unknown>) => app.post("/v1/admin/servers", { token: admin.token, body: { ...base, ...body } })

describe("GET /v1/admin/servers [D92]", () => {
  test("detail: every field, last_seen_at set by the node's poll, peers and plan_ids; a page like invoices", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.70.0.0/24" })
    const id = made.id
    const detail = await ok(adm.vpnAdmin.getServer({ path: { server: id } }))
    expect(detail).toMatchObject({
      id,
      name: "Dual",
      protocol: "wireguard",
      port: 51820,
      subnet: "10.70.0.0/24",
      subnet6: null,
      last_seen_at: null,
      peers: 0,
      plan_ids: [plan.planId]
    })
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: made.node_token })
    expect(typeof (await ok(me.vpn.wireguard({ path: { server: id } })))).toBe("string")
    await ok(node.node.peers({ urlParams: {} }))
    const seen = await ok(adm.vpnAdmin.getServer({ path: { server: id } }))
    expect(seen.peers).toBe(1)
    expect(seen.last_seen_at?.toISOString()).toBe(app.clock.get().toISOString())

    const page = await ok(adm.vpnAdmin.listServers({ urlParams: {} }))
    expect(page.meta).toMatchObject({ current_page: 1, per_page: 15 })
    expect(page.links.first).toMatch(/\/v1\/admin\/servers\?page=1$/)
    expect(page.data.map((s) => s.id)).toContain(id)
    expect((await app.get("/v1/admin/servers/999999", { token: admin.token })).status).toBe(404)
    expect((await app.get("/v1/admin/servers", { token: user.token })).status).toBe(403)
  })
})

describe("subnet6 [D90]", () => {
  test("a dual-stack server: config Address and node allowed_ips list both; invalid subnet6 is 422", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.71.0.0/24", subnet6: "fd42:66::/64" })
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: made.node_token })
    const conf = await ok(me.vpn.wireguard({ path: { server: made.id } }))
    expect(/^Address = (.+)$/m.exec(conf)![1]).toBe("10.71.0.2/32, fd42:66::2/128")
    const peers = (await ok(node.node.peers({ urlParams: {} }))).data
    expect(peers[0]).toMatchObject({ allowed_ips: "10.71.0.2/32, fd42:66::2/128" })
    expect((await ok(adm.vpnAdmin.getServer({ path: { server: made.id } }))).subnet6).toBe("fd42:66::/64")

    const bad = await createServerRaw({ subnet6: "10.0.0.0/8" })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors)).toEqual(["subnet6"])
    // unset again: IPv4 only
    await ok(adm.vpnAdmin.updateServer({ path: { server: made.id }, payload: { subnet6: null } }))
    const again = await ok(me.vpn.wireguard({ path: { server: made.id } }))
    expect(/^Address = (.+)$/m.exec(again)![1]).toBe("10.71.0.2/32")
  })
})

describe("allocation after a subnet change [D90]", () => {
  test("the lowest free host of the new subnet; peers of the old one keep their addresses", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.72.0.0/24" })
    const download = async () => {
      const user = await app.createUser()
      await makeService(app, user.id, plan)
      const me = await typedClient(app, { token: user.token })
      const conf = await ok(me.vpn.wireguard({ path: { server: made.id } }))
      return /^Address = (.+)$/m.exec(conf)![1]
    }
    expect(await download()).toBe("10.72.0.2/32")
    await ok(adm.vpnAdmin.updateServer({ path: { server: made.id }, payload: { subnet: "10.73.0.0/24" } }))
    expect(await download()).toBe("10.73.0.2/32")
    expect(await download()).toBe("10.73.0.3/32")
    // back to the first subnet: .2 is still taken there
    await ok(adm.vpnAdmin.updateServer({ path: { server: made.id }, payload: { subnet: "10.72.0.0/24" } }))
    expect(await download()).toBe("10.72.0.3/32")
  })
})
