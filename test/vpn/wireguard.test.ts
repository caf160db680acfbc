import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { AppKey } from "../../src/platform/Crypto.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, GIB, makePlan, makeServer, makeService, SERVER_PUBLIC_KEY, setUsage, subscriber } from "./fixtures.ts"

// [D52]: WireGuard downloads, peers, addresses and keys.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const testKey = AppKey.make(new Uint8Array(32).fill(7))
const month = () => app.clock.get().toISOString().slice(0, 7)

const CONFIG = new RegExp(
  "^\\[Interface\\]\\n" +
    "PrivateKey = ([A-Za-z0-9+/]{43}=)\\n" +
    "Address = (10\\.66\\.\\d+\\.\\d+)/32\\n" +
    "DNS = 1\\.1\\.1\\.1, 1\\.0\\.0\\.1\\n" +
    "\\n" +
    "\\[Peer\\]\\n" +
    `PublicKey = ${SERVER_PUBLIC_KEY.replace(/[+/]/g, "\\$&")}\\n` +
    "Endpoint = 198\\.51\\.100\\.10:51820\\n" +
    "AllowedIPs = 0\\.0\\.0\\.0/0, ::/0\\n" +
    "PersistentKeepalive = 25\\n$"
)

/** a user's WireGuard download through the typed client (its 200 text) */
const download = async (token: string, server: number) => {
  const client = await typedClient(app, { token })
  return ok(client.vpn.wireguard({ path: { server } }))
}

const parse = (text: string) => {
  const match = CONFIG.exec(text)
  if (!match) throw new Error(`not the [D52] format:\n${text}`)
  return { privateKey: match[1]!, address: match[2]! }
}

describe("GET /v1/servers/{server}/wireguard [D52]", () => {
  test("200: the exact format, text/plain, attachment named by the server's slug, no-store", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeService(app, user.id, plan)
    const server = await makeServer(app, { name: "Amsterdam #1 (NL)", planIds: [plan.planId] })
    const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="amsterdam-1-nl.conf"')
    expect(res.headers.get("cache-control")).toBe("no-store")
    const config = parse(res.text)
    expect(config.address).toBe("10.66.0.2")
  })

  test("the private key yields the stored public key; it is stored only encrypted", async () => {
    const { user, server } = await subscriber(app)
    const me = await typedClient(app, { token: user.token })
    const { privateKey, address } = parse(await ok(me.vpn.wireguard({ path: { server: server.id } })))
    const [peer] = await app.sql<{ public_key: string; private_key_enc: string; address: string }>`
      select public_key, private_key_enc, host(address) as address from wireguard_peers where user_id = ${user.id} and server_id = ${server.id}`
    expect(KeyGen.publicKeyOf(privateKey)).toBe(peer!.public_key)
    expect(peer!.address).toBe(address)
    expect(peer!.private_key_enc).not.toContain(privateKey)
    expect(peer!.private_key_enc.startsWith("v1:")).toBe(true)
    expect(testKey.decrypt(peer!.private_key_enc)).toBe(privateKey)
    const dump = await app.sql`select * from wireguard_peers`
    expect(JSON.stringify(dump)).not.toContain(privateKey)
  })

  test("later downloads return the same peer", async () => {
    const { user, server } = await subscriber(app)
    const me = await typedClient(app, { token: user.token })
    const first = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const second = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    expect(second).toBe(first)
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from wireguard_peers where user_id = ${user.id}`
    expect(count!.n).toBe(1)
  })

  test("the next free address per server: .2, .3, ...; a freed address is reused", async () => {
    const plan = await makePlan(app)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const users = []
    for (let i = 0; i < 3; i++) {
      const u = await app.createUser()
      await makeService(app, u.id, plan)
      users.push(u)
    }
    const addresses = []
    for (const u of users) addresses.push(parse(await download(u.token, server.id)).address)
    expect(addresses).toEqual(["10.66.0.2", "10.66.0.3", "10.66.0.4"])
    await app.sql`delete from wireguard_peers where user_id = ${users[1]!.id}`
    const back = await typedClient(app, { token: users[1]!.token })
    const again = await ok(back.vpn.wireguard({ path: { server: server.id } }))
    expect(parse(again).address).toBe("10.66.0.3")
  })

  test("50 concurrent first downloads by 50 users get 50 distinct addresses", async () => {
    const plan = await makePlan(app)
    const server = await makeServer(app, { planIds: [plan.planId], subnet: "10.70.0.0/24" })
    const users = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const u = await app.createUser()
        await makeService(app, u.id, plan)
        return u
      })
    )
    const clients = await Promise.all(users.map((u) => typedClient(app, { token: u.token })))
    // every one answered 200 (else `ok` throws), in parallel
    const texts = await Promise.all(clients.map((client) => ok(client.vpn.wireguard({ path: { server: server.id } }))))
    expect(texts).toHaveLength(users.length)
    const addresses = texts.map((text) => /Address = ([\d.]+)\/32/.exec(text)![1]!)
    expect(new Set(addresses).size).toBe(50)
    const hosts = addresses.map((a) => Number(a.split(".")[3])).sort((a, b) => a - b)
    expect(hosts).toEqual(Array.from({ length: 50 }, (_, i) => i + 2))
    const rows = await app.sql<{ n: number }>`select count(distinct address)::int as n from wireguard_peers where server_id = ${server.id}`
    expect(rows[0]!.n).toBe(50)
  }, 60_000)

  test("a full subnet is a clear 503, never a duplicate; network, .1 and broadcast are skipped", async () => {
    const plan = await makePlan(app)
    // a /29: .0 network, .1 server, .7 broadcast -> .2 to .6 for clients
    const server = await makeServer(app, { planIds: [plan.planId], subnet: "10.80.0.0/29" })
    const addresses = []
    for (let i = 0; i < 6; i++) {
      const u = await app.createUser()
      await makeService(app, u.id, plan)
      const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: u.token })
      if (i < 5) addresses.push(/Address = ([\d.]+)\/32/.exec(res.text)![1])
      else {
        expect(res.status).toBe(503)
        expect(res.body).toEqual({ success: false, message: "No free address is left on this server." })
      }
    }
    expect(addresses).toEqual(["10.80.0.2", "10.80.0.3", "10.80.0.4", "10.80.0.5", "10.80.0.6"])
    const rows = await app.sql<{ n: number }>`select count(*)::int as n from wireguard_peers where server_id = ${server.id}`
    expect(rows[0]!.n).toBe(5)
  })

  test("404 for an unknown server or an OpenVPN server", async () => {
    const { user, plan } = await subscriber(app)
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    for (const id of ["999999", "abc", String(ovpn.id)]) {
      const res = await app.get(`/v1/servers/${id}/wireguard`, { token: user.token })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
  })

  test("404 before 403: a caller without a service still learns nothing of an unknown or OpenVPN server [D11]", async () => {
    const plan = await makePlan(app)
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const wg = await makeServer(app, { planIds: [plan.planId] })
    const none = await app.createUser()
    for (const id of ["999999", String(ovpn.id)]) {
      expect((await app.get(`/v1/servers/${id}/wireguard`, { token: none.token })).status).toBe(404)
    }
    expect((await app.get(`/v1/servers/${wg.id}/wireguard`, { token: none.token })).status).toBe(403)
    expect((await app.get(`/v1/servers/${ovpn.id}/openvpn`, { token: none.token })).status).toBe(403)
    expect((await app.get(`/v1/servers/${wg.id}/openvpn`, { token: none.token })).status).toBe(404)
    expect((await app.get("/v1/servers/999999", { token: none.token })).status).toBe(404)
    expect((await app.get(`/v1/servers/${wg.id}`, { token: none.token })).status).toBe(403)
  })

  test("a second download reads the same peer (no new key, no new address)", async () => {
    const { user, server } = await subscriber(app)
    const me = await typedClient(app, { token: user.token })
    const first = parse(await ok(me.vpn.wireguard({ path: { server: server.id } })))
    const second = parse(await ok(me.vpn.wireguard({ path: { server: server.id } })))
    expect(second).toEqual(first)
    const rows = await app.sql<{ n: number }>`select count(*)::int as n from wireguard_peers where user_id = ${user.id}`
    expect(rows[0]!.n).toBe(1)
  })

  test("403 without a current service, with an expired one, or outside the plan", async () => {
    const plan = await makePlan(app)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const none = await app.createUser()
    const expired = await app.createUser()
    await makeService(app, expired.id, plan, { expiresAt: new Date(app.clock.get().getTime() - DAY) })
    const outside = await subscriber(app)
    for (const user of [none, expired, outside.user]) {
      const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
      expect(res.status).toBe(403)
      expect(res.body).toEqual({ success: false, message: "Your plan does not include this server." })
    }
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from wireguard_peers where server_id = ${server.id}`
    expect(count!.n).toBe(0)
  })

  test("423 Service suspended.", async () => {
    const { user, server } = await subscriber(app, { status: "suspended" })
    const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(res.status).toBe(423)
    expect(res.body).toEqual({ success: false, message: "Service suspended." })
  })

  test("423 Bandwidth limit exceeded. when this month's usage reaches the limit; last month's does not count", async () => {
    const { user, server, serviceId } = await subscriber(app, { limitGb: 1 })
    await setUsage(app, serviceId, "2025-12", 5 * GIB)
    const me = await typedClient(app, { token: user.token })
    expect(typeof (await ok(me.vpn.wireguard({ path: { server: server.id } })))).toBe("string")
    await setUsage(app, serviceId, month(), GIB - 1)
    expect(typeof (await ok(me.vpn.wireguard({ path: { server: server.id } })))).toBe("string")
    await setUsage(app, serviceId, month(), GIB / 2, GIB / 2)
    const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(res.status).toBe(423)
    expect(res.body).toEqual({ success: false, message: "Bandwidth limit exceeded." })
  })

  test("an unlimited plan is never over its limit", async () => {
    const { user, server, serviceId } = await subscriber(app, { limitGb: 0 })
    await setUsage(app, serviceId, month(), 5000 * GIB)
    const me = await typedClient(app, { token: user.token })
    expect(typeof (await ok(me.vpn.wireguard({ path: { server: server.id } })))).toBe("string")
  })

  test("401 without a token; a node token is no user token", async () => {
    const { server } = await subscriber(app)
    expect((await app.get(`/v1/servers/${server.id}/wireguard`)).status).toBe(401)
    const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: server.nodeToken })
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
  })
})
