import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { makePlan, makeService, SERVER_PUBLIC_KEY } from "./fixtures.ts"

// [D92]: admins see each server with last_seen_at, peers and plan_ids; [D90]: subnet6 (IPv6 dual stack).
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const createServer = (body: Record<string, unknown>) =>
  app.post("/v1/admin/servers", {
    token: admin.token,
    body: { name: "Dual", country: "NL", city: "Amsterdam", protocol: "wireguard", ip: "198.51.100.20", public_key: SERVER_PUBLIC_KEY, ...body }
  })

describe("GET /v1/admin/servers [D92]", () => {
  test("detail: every field, last_seen_at set by the node's poll, peers and plan_ids; a page like invoices", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.70.0.0/24" })
    expect(made.status).toBe(201)
    const id = made.body.data.id
    const detail = await app.get(`/v1/admin/servers/${id}`, { token: admin.token })
    expect(detail.status).toBe(200)
    expect(detail.body.data).toMatchObject({
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
    expect((await app.get(`/v1/servers/${id}/wireguard`, { token: user.token })).status).toBe(200)
    expect((await app.get("/v1/node/peers", { token: made.body.data.node_token })).status).toBe(200)
    const seen = (await app.get(`/v1/admin/servers/${id}`, { token: admin.token })).body.data
    expect(seen.peers).toBe(1)
    expect(seen.last_seen_at).toBe(app.clock.get().toISOString())

    const page = await app.get("/v1/admin/servers", { token: admin.token })
    expect(page.status).toBe(200)
    expect(page.body.meta).toMatchObject({ current_page: 1, per_page: 15 })
    expect(page.body.links.first).toMatch(/\/v1\/admin\/servers\?page=1$/)
    expect(page.body.data.map((s: { id: number }) => s.id)).toContain(id)
    expect((await app.get("/v1/admin/servers/999999", { token: admin.token })).status).toBe(404)
    expect((await app.get("/v1/admin/servers", { token: user.token })).status).toBe(403)
  })
})

describe("subnet6 [D90]", () => {
  test("a dual-stack server: config Address and node allowed_ips list both; invalid subnet6 is 422", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.71.0.0/24", subnet6: "fd42:66::/64" })
    expect(made.status).toBe(201)
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const conf = await app.get(`/v1/servers/${made.body.data.id}/wireguard`, { token: user.token })
    expect(/^Address = (.+)$/m.exec(conf.text)![1]).toBe("10.71.0.2/32, fd42:66::2/128")
    const peers = (await app.get("/v1/node/peers", { token: made.body.data.node_token })).body.data
    expect(peers[0].allowed_ips).toBe("10.71.0.2/32, fd42:66::2/128")
    expect((await app.get(`/v1/admin/servers/${made.body.data.id}`, { token: admin.token })).body.data.subnet6).toBe("fd42:66::/64")

    const bad = await createServer({ subnet6: "10.0.0.0/8" })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors)).toEqual(["subnet6"])
    // unset again: IPv4 only
    const cleared = await app.put(`/v1/admin/servers/${made.body.data.id}`, { token: admin.token, body: { subnet6: null } })
    expect(cleared.status).toBe(200)
    const again = await app.get(`/v1/servers/${made.body.data.id}/wireguard`, { token: user.token })
    expect(/^Address = (.+)$/m.exec(again.text)![1]).toBe("10.71.0.2/32")
  })
})

describe("allocation after a subnet change [D90]", () => {
  test("the lowest free host of the new subnet; peers of the old one keep their addresses", async () => {
    const plan = await makePlan(app)
    const made = await createServer({ plan_ids: [plan.planId], subnet: "10.72.0.0/24" })
    const download = async () => {
      const user = await app.createUser()
      await makeService(app, user.id, plan)
      const conf = await app.get(`/v1/servers/${made.body.data.id}/wireguard`, { token: user.token })
      expect(conf.status).toBe(200)
      return /^Address = (.+)$/m.exec(conf.text)![1]
    }
    expect(await download()).toBe("10.72.0.2/32")
    expect((await app.put(`/v1/admin/servers/${made.body.data.id}`, { token: admin.token, body: { subnet: "10.73.0.0/24" } })).status).toBe(200)
    expect(await download()).toBe("10.73.0.2/32")
    expect(await download()).toBe("10.73.0.3/32")
    // back to the first subnet: .2 is still taken there
    expect((await app.put(`/v1/admin/servers/${made.body.data.id}`, { token: admin.token, body: { subnet: "10.72.0.0/24" } })).status).toBe(200)
    expect(await download()).toBe("10.72.0.3/32")
  })
})
