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
