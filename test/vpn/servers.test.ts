import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, makePlan, makeServer, makeService, subscriber } from "./fixtures.ts"

// [D50] [D51]: the servers a caller's current service grants.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const PLAN_EXCLUDES = { success: false, message: "Your plan does not include this server." }

describe("GET /v1/servers [D51]", () => {
  test("401 without a token", async () => {
    const res = await app.get("/v1/servers")
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
  })

  test("[] without a current service", async () => {
    const user = await app.createUser()
    await makeServer(app)
    const me = await typedClient(app, { token: user.token })
    expect(await ok(me.vpn.listServers())).toEqual([])
  })

  test("[] when the only service is expired or pending", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeServer(app, { planIds: [plan.planId] })
    await makeService(app, user.id, plan, { status: "active", expiresAt: new Date(app.clock.get().getTime() - DAY) })
    await makeService(app, user.id, plan, { status: "pending" })
    const me = await typedClient(app, { token: user.token })
    expect(await ok(me.vpn.listServers())).toEqual([])
  })

  test("lists exactly the servers of the current service's plan, with exactly the spec's fields", async () => {
    const { user, plan, server } = await subscriber(app)
    const second = await makeServer(app, { protocol: "openvpn", name: "Paris 1", planIds: [plan.planId] })
    const other = await makePlan(app)
    await makeServer(app, { name: "Not mine", planIds: [other.planId] })
    const res = await app.get("/v1/servers", { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body.data.map((s: { id: number }) => s.id)).toEqual([server.id, second.id])
    expect(res.body.data[1]).toEqual({
      id: second.id,
      name: "Paris 1",
      country: "NL",
      city: "Amsterdam",
      protocol: "openvpn",
      ip: "198.51.100.10",
      status: "active"
    })
    for (const s of res.body.data) expect(Object.keys(s).sort()).toEqual(["city", "country", "id", "ip", "name", "protocol", "status"])
  })

  test("a suspended current service still lists its servers", async () => {
    const { user, server } = await subscriber(app, { status: "suspended" })
    const me = await typedClient(app, { token: user.token })
    expect<ReadonlyArray<number>>((await ok(me.vpn.listServers())).map((s) => s.id)).toEqual([server.id])
  })
})

describe("GET /v1/servers/{server} [D51]", () => {
  test("200 with the server", async () => {
    const { user, server } = await subscriber(app)
    const res = await app.get(`/v1/servers/${server.id}`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.body.data.id).toBe(server.id)
    expect(Object.keys(res.body.data).sort()).toEqual(["city", "country", "id", "ip", "name", "protocol", "status"])
  })

  test("404 for an unknown or impossible id", async () => {
    const { user } = await subscriber(app)
    for (const id of ["999999", "abc", "0", "-1"]) {
      const res = await app.get(`/v1/servers/${id}`, { token: user.token })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
  })

  test("403 for a server outside the plan, and without a current service", async () => {
    const { user } = await subscriber(app)
    const other = await makePlan(app)
    const foreign = await makeServer(app, { planIds: [other.planId] })
    const res = await app.get(`/v1/servers/${foreign.id}`, { token: user.token })
    expect(res.status).toBe(403)
    expect(res.body).toEqual(PLAN_EXCLUDES)
    const nobody = await app.createUser()
    const res2 = await app.get(`/v1/servers/${foreign.id}`, { token: nobody.token })
    expect(res2.status).toBe(403)
    expect(res2.body).toEqual(PLAN_EXCLUDES)
  })
})
