import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { GIB, makePlan, makeServer, makeService } from "../vpn/fixtures.ts"

// Issue 23, the second outside review: nodes, webhooks and limits ([D116], [D117]).
setDefaultTimeout(60_000)

let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const month = () => app.clock.get().toISOString().slice(0, 7)
const usageOf = async (serviceId: number) => {
  const rows = await app.sql<{ rx: number; tx: number }>`
    select rx_bytes as rx, tx_bytes as tx from usage_records where service_id = ${serviceId} and period = ${`${month()}-01`}::date`
  return rows[0] ? { rx: Number(rows[0].rx), tx: Number(rows[0].tx) } : { rx: 0, tx: 0 }
}

/** A subscriber whose plan grants a WireGuard and an OpenVPN server, with OpenVPN credentials. */
const subscriber = async () => {
  const user = await app.createUser()
  const plan = await makePlan(app)
  const serviceId = await makeService(app, user.id, plan)
  const wg = await makeServer(app, { planIds: [plan.planId] })
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
  const creds = await app.get("/v1/account/vpn-credentials", { token: user.token })
  expect(creds.status).toBe(200)
  return { user, plan, serviceId, wg, ovpn, username: creds.body.data.username as string, password: creds.body.data.password as string }
}

describe("item 4: a node reports only what its server serves [D116]", () => {
  test("a username entry from a WireGuard server, or an OpenVPN server not granting the user's plan, is not counted nor accepted", async () => {
    const s = await subscriber()
    const ungranted = await makeServer(app, { protocol: "openvpn", planIds: [(await makePlan(app)).planId] })
    const ungrantedWg = await makeServer(app, { planIds: [] })
    for (const server of [s.wg, ungranted, ungrantedWg]) {
      const usage = await app.post("/v1/node/usage", { token: server.nodeToken, body: [{ username: s.username, rx_bytes: 5 * GIB, tx_bytes: 1 }] })
      expect(usage.body).toEqual({ success: true, data: { accepted: 0 } })
      const counters = await app.post("/v1/node/counters", { token: server.nodeToken, body: [{ username: s.username, rx_total: 7 * GIB, tx_total: 1 }] })
      expect(counters.body).toEqual({ success: true, data: { accepted: 0 } })
    }
    expect(await usageOf(s.serviceId)).toEqual({ rx: 0, tx: 0 })
    // the counters of an entry not served are not kept either: on its own server the first report counts whole
    const [kept] = await app.sql<{ n: number }>`select count(*)::int as n from peer_counters where peer_key = ${s.username}`
    expect(kept!.n).toBe(0)
    // the OpenVPN server of the user's plan counts it
    const own = await app.post("/v1/node/usage", { token: s.ovpn.nodeToken, body: [{ username: s.username, rx_bytes: 5, tx_bytes: 1 }] })
    expect(own.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(s.serviceId)).toEqual({ rx: 5, tx: 1 })
  })

  test("`accepted` does not tell an existing username from an unknown one on a server that does not serve it", async () => {
    const s = await subscriber()
    const other = await subscriber()
    const answers = []
    for (const username of [s.username, "u0-nobody"]) {
      const res = await app.post("/v1/node/usage", { token: other.ovpn.nodeToken, body: [{ username, rx_bytes: 1, tx_bytes: 1 }] })
      answers.push(`${res.status} ${res.text}`)
    }
    expect(answers[0]).toBe(answers[1]!)
    expect(answers[0]).toBe(`200 ${JSON.stringify({ success: true, data: { accepted: 0 } })}`)
  })

  test("a public_key entry counts only for that server's peers", async () => {
    const s = await subscriber()
    expect((await app.get(`/v1/servers/${s.wg.id}/wireguard`, { token: s.user.token })).status).toBe(200)
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${s.wg.id}`
    const foreign = await app.post("/v1/node/usage", { token: s.ovpn.nodeToken, body: [{ public_key: peer!.public_key, rx_bytes: 9, tx_bytes: 9 }] })
    expect(foreign.body.data.accepted).toBe(0)
    const own = await app.post("/v1/node/usage", { token: s.wg.nodeToken, body: [{ public_key: peer!.public_key, rx_bytes: 9, tx_bytes: 9 }] })
    expect(own.body.data.accepted).toBe(1)
    expect(await usageOf(s.serviceId)).toEqual({ rx: 9, tx: 9 })
  })

  test("POST /v1/node/openvpn/auth from a WireGuard server's token is 403, even for the right pair of a granted user", async () => {
    const s = await subscriber()
    const body = { username: s.username, password: s.password }
    expect((await app.post("/v1/node/openvpn/auth", { token: s.ovpn.nodeToken, body })).status).toBe(200)
    const res = await app.post("/v1/node/openvpn/auth", { token: s.wg.nodeToken, body })
    expect(res.status).toBe(403)
    expect(res.body).toEqual({ success: false, message: "Forbidden." })
  })
})

describe("item 10: webhook URLs [D117]", () => {
  const create = (on: TestApp, url: string) => on.post("/v1/admin/webhooks", { token: admin.token, body: { url, events: ["user.registered"] } })

  test("an IPv6 address carrying a loopback or private IPv4 address is refused (422 errors.url)", async () => {
    for (const url of [
      "https://[::ffff:0:127.0.0.1]/hook", // IPv4-translated
      "https://[::ffff:0:a00:1]/hook",
      "https://[2002:7f00:1::]/hook", // 6to4 of 127.0.0.1
      "https://[2002:a9fe:a9fe::1]/hook", // 6to4 of 169.254.169.254
      "https://[64:ff9b:1::7f00:1]/hook", // NAT64 local-use, /96 form
      "https://[64:ff9b:1:7f00:1::]/hook", // NAT64 local-use, /48 form
      "https://[64:ff9b::a9fe:a9fe]/hook", // NAT64 well-known
      "https://[2001:0:7f00:1::1]/hook", // Teredo server 127.0.0.1
      "https://[2001:0:808:808::80ff:fffe]/hook" // Teredo client 127.0.0.1 (inverted)
    ]) {
      const res = await create(app, url)
      expect([url, res.status, Object.keys(res.body.errors ?? {})]).toEqual([url, 422, ["url"]])
    }
  })

  test("the same forms carrying a public IPv4 address are accepted", async () => {
    for (const url of ["https://[2002:808:808::1]/hook", "https://[64:ff9b::808:808]/hook", "https://[64:ff9b:1::808:808]/hook"]) {
      const res = await create(app, url)
      expect([url, res.status]).toEqual([url, 201])
    }
  })

  describe("with WEBHOOKS_ALLOW_PRIVATE=true", () => {
    let open: TestApp
    beforeAll(async () => {
      open = await makeTestApp({ reset: false, config: { webhooksAllowPrivate: true } })
    })
    afterAll(() => open.dispose())

    test("http:// to a name that does not resolve is refused (422 errors.url), on create and on update", async () => {
      for (const url of ["http://example.com/hook", "http://hooks.example.com/in", "http://nothing.invalid/hook"]) {
        const res = await create(open, url)
        expect([url, res.status, res.body.errors]).toEqual([url, 422, { url: ["The url host does not resolve."] }])
      }
      const made = await create(open, "http://localhost:8080/hook")
      expect(made.status).toBe(201)
      const updated = await open.put(`/v1/admin/webhooks/${made.body.data.id}`, { token: admin.token, body: { url: "http://example.com/hook" } })
      expect(updated.status).toBe(422)
      expect(Object.keys(updated.body.errors)).toEqual(["url"])
      expect((await open.get(`/v1/admin/webhooks/${made.body.data.id}`, { token: admin.token })).body.data.url).toBe("http://localhost:8080/hook")
    })

    test("http:// to an address or name that is all private/loopback is accepted, to a public one refused", async () => {
      for (const url of ["http://127.0.0.1:9/hook", "http://[2002:7f00:1::]/hook", "http://[::ffff:0:127.0.0.1]/hook", "http://localhost:9/hook"]) {
        expect([url, (await create(open, url)).status]).toEqual([url, 201])
      }
      for (const url of ["http://8.8.8.8/hook", "http://[2002:808:808::1]/hook"]) {
        const res = await create(open, url)
        expect([url, res.status, Object.keys(res.body.errors ?? {})]).toEqual([url, 422, ["url"]])
      }
    })

    test("https:// to a name that does not resolve here is kept (checked again before each send)", async () => {
      expect((await create(open, "https://hooks.example.com/in")).status).toBe(201)
    })
  })
})

describe("item 11: quota notices follow the admin's usage too [D117]", () => {
  test("POST /v1/admin/services/{service}/usage across 80 % and 100 % sends each mail and usage.threshold event once", async () => {
    const received: Array<{ type: string; data: Record<string, unknown> }> = []
    const receiver = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        received.push(JSON.parse(await req.text()))
        return new Response(null, { status: 204 })
      }
    })
    const open = await makeTestApp({ reset: false, config: { webhooksAllowPrivate: true } })
    try {
      const hook = await open.post("/v1/admin/webhooks", {
        token: admin.token,
        body: { url: `http://127.0.0.1:${receiver.port}/usage`, events: ["usage.threshold"] }
      })
      expect(hook.status).toBe(201)
      const user = await open.createUser()
      const plan = await makePlan(open, 10)
      const serviceId = await makeService(open, user.id, plan)
      const add = (bytes: number) => open.post(`/v1/admin/services/${serviceId}/usage`, { token: admin.token, body: { bytes } })
      expect((await add(7 * GIB)).status).toBe(201)
      expect((await add(1.5 * GIB)).status).toBe(201) // 8.5 of 10 GB
      expect((await add(GIB / 8)).status).toBe(201)
      expect((await add(2 * GIB)).status).toBe(201) // past 10 GB
      expect((await add(GIB)).status).toBe(201)
      const mine = () => received.filter((e) => e.type === "usage.threshold" && e.data["service_id"] === serviceId)
      const deadline = Date.now() + 10_000
      while ((mine().length < 2 || open.outbox.filter((m) => m.to === user.email).length < 2) && Date.now() < deadline) {
        await open.run(runJobsOnce)
        await Bun.sleep(50)
      }
      await open.run(runJobsOnce)
      expect(open.outbox.filter((m) => m.to === user.email).map((m) => m.subject)).toEqual([
        "You have used 80 % of your data for this period",
        "You have used all your data for this period"
      ])
      expect(mine().map((e) => e.data["threshold"])).toEqual([80, 100])
      expect(mine()[0]!.data).toMatchObject({ user_id: user.id, used_bytes: Math.round(8.5 * GIB), limit_bytes: 10 * GIB })
    } finally {
      await open.dispose()
      receiver.stop(true)
    }
  })
})

describe("item 13: long path ids and the /docs headers [D117]", () => {
  test("a path id of 100+ characters is 404 Resource not found., like any unknown id (not 405)", async () => {
    const user = await app.createUser()
    for (const n of [100, 101, 120, 1000, 5000]) {
      for (const [method, path, token] of [
        ["GET", `/v1/services/${"1".repeat(n)}`, user.token],
        ["GET", `/v1/invoices/${"a".repeat(n)}`, user.token],
        ["DELETE", `/v1/devices/${"7".repeat(n)}`, user.token],
        ["GET", `/v1/devices/${"7".repeat(n)}/wireguard/1`, user.token],
        ["PUT", `/v1/admin/webhooks/${"9".repeat(n)}`, admin.token],
        ["GET", `/v1/plans/${"%41".repeat(n)}`, user.token]
      ] as const) {
        const res = await app.request(method, path, { token, ...(method === "PUT" ? { body: { description: "x" } } : {}) })
        expect([n, method, path.slice(0, 24), res.status, res.body]).toEqual([
          n,
          method,
          path.slice(0, 24),
          404,
          { success: false, message: "Resource not found." }
        ])
      }
    }
    // a method a known path does not serve is still 405
    expect((await app.request("PATCH", "/v1/services/1", { token: user.token })).status).toBe(405)
  })

  test("/docs sends nosniff, no-referrer and a CSP with frame-ancestors 'none'", async () => {
    for (const path of ["/docs", "/docs?x=1"]) {
      const res = await app.get(path)
      expect(res.status).toBe(200)
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      expect(res.headers.get("referrer-policy")).toBe("no-referrer")
      expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'")
    }
    // the API's JSON answers are unchanged
    expect((await app.get("/v1/openapi.json")).headers.get("content-security-policy")).toBeNull()
  })
})
