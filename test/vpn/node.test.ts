import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, GIB, makePlan, makeServer, makeService, setUsage } from "./fixtures.ts"

// [D54]: the node API, behind node tokens.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const month = () => app.clock.get().toISOString().slice(0, 7)

const usageOf = async (serviceId: number) => {
  const rows = await app.sql<{ rx: number; tx: number }>`
    select rx_bytes as rx, tx_bytes as tx from usage_records where service_id = ${serviceId} and period = ${`${month()}-01`}::date`
  return rows[0] ? { rx: Number(rows[0].rx), tx: Number(rows[0].tx) } : { rx: 0, tx: 0 }
}

/** A WireGuard server for a limited plan and a user with a downloaded peer on it. */
const withPeer = async (options: { readonly limitGb?: number; readonly status?: string; readonly expired?: boolean } = {}) => {
  const user = await app.createUser()
  const plan = await makePlan(app, options.limitGb ?? 10)
  const serviceId = await makeService(app, user.id, plan)
  const server = await makeServer(app, { planIds: [plan.planId] })
  const me = await typedClient(app, { token: user.token })
  const node = await typedClient(app, { token: server.nodeToken })
  await ok(me.vpn.wireguard({ path: { server: server.id } }))
  const [peer] = await app.sql<{ public_key: string; address: string }>`
    select public_key, host(address) as address from wireguard_peers where user_id = ${user.id}`
  return { user, me, node, plan, serviceId, server, publicKey: peer!.public_key, address: peer!.address }
}

/** the public keys of a node's list (its WireGuard peers) */
const keysOf = (entries: ReadonlyArray<object>) => entries.map((p) => ("public_key" in p ? p.public_key : undefined))

describe("node tokens [D54]", () => {
  test("a node token works on the node routes; no token, a user token or another string is 401", async () => {
    const { node, user } = await withPeer()
    await ok(node.node.peers({ urlParams: {} }))
    for (const token of [undefined, user.token, "node_nope", ""]) {
      for (const [method, path] of [
        ["GET", "/v1/node/peers"],
        ["POST", "/v1/node/openvpn/auth"],
        ["POST", "/v1/node/usage"]
      ] as const) {
        const res = await app.request(method, path, { ...(token !== undefined ? { token } : {}), body: method === "POST" ? [] : undefined })
        expect(res.status).toBe(401)
        expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
      }
    }
  })

  test("a node token is 401 on user and admin routes", async () => {
    const { server } = await withPeer()
    for (const path of ["/v1/servers", "/v1/bandwidth/current", "/v1/account/vpn-credentials"]) {
      const res = await app.get(path, { token: server.nodeToken })
      expect(res.status).toBe(401)
    }
    const admin = await app.post("/v1/admin/servers", { token: server.nodeToken, body: {} })
    expect(admin.status).toBe(401)
  })
})

describe("GET /v1/node/peers [D54]", () => {
  test("the server's peers with allowed_ips and enabled", async () => {
    const a = await withPeer()
    const res = await ok(a.node.node.peers({ urlParams: {} }))
    expect(res.data).toEqual([{ public_key: a.publicKey, allowed_ips: `${a.address}/32`, enabled: true, speed_limit_mbps: null }])
  })

  test("enabled is false for a suspended, expired, over-limit, missing or no-longer-granting service", async () => {
    const plan = await makePlan(app, 1)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const cases = ["ok", "suspended", "expired", "over", "cancelled", "other-plan"] as const
    const users: Record<string, { id: number; token: string; serviceId: number }> = {}
    for (const name of cases) {
      const u = await app.createUser()
      const serviceId = await makeService(app, u.id, plan)
      const them = await typedClient(app, { token: u.token })
      await ok(them.vpn.wireguard({ path: { server: server.id } }))
      users[name] = { ...u, serviceId }
    }
    await app.sql`update services set status = 'suspended' where id = ${users["suspended"]!.serviceId}`
    await app.sql`update services set expires_at = ${new Date(app.clock.get().getTime() - DAY)} where id = ${users["expired"]!.serviceId}`
    await setUsage(app, users["over"]!.serviceId, month(), GIB)
    await app.sql`update services set status = 'cancelled' where id = ${users["cancelled"]!.serviceId}`
    const other = await makePlan(app)
    await makeService(app, users["other-plan"]!.id, other, { createdAt: new Date(app.clock.get().getTime() + 1000) })
    const node = await typedClient(app, { token: server.nodeToken })
    const res = await ok(node.node.peers({ urlParams: {} }))
    const peers = await app.sql<{ user_id: number; public_key: string }>`select user_id, public_key from wireguard_peers where server_id = ${server.id}`
    const enabledOf = (name: string) => {
      const key = peers.find((p) => p.user_id === users[name]!.id)!.public_key
      const entry = res.data.find((p) => "public_key" in p && p.public_key === key)
      return entry !== undefined && "enabled" in entry ? entry.enabled : undefined
    }
    expect(res.data).toHaveLength(cases.length)
    expect(Object.fromEntries(cases.map((c) => [c, enabledOf(c)]))).toEqual({
      ok: true,
      suspended: false,
      expired: false,
      over: false,
      cancelled: false,
      "other-plan": false
    })
  })

  test("only this node's server's peers", async () => {
    const a = await withPeer()
    const b = await withPeer()
    const res = await ok(b.node.node.peers({ urlParams: {} }))
    expect(keysOf(res.data)).toEqual([b.publicKey])
    expect(keysOf(res.data)).not.toContain(a.publicKey)
  })
})

describe("POST /v1/node/openvpn/auth [D54]", () => {
  const setup = async (limitGb = 10) => {
    const user = await app.createUser()
    const plan = await makePlan(app, limitGb)
    const serviceId = await makeService(app, user.id, plan)
    const server = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: server.nodeToken })
    const creds = await ok(me.vpn.vpnCredentials())
    const auth = (body: unknown, token = server.nodeToken) => app.post("/v1/node/openvpn/auth", { token, body })
    return { user, plan, serviceId, server, node, creds, auth }
  }

  test("200 for the right pair, 403 for a wrong secret or an unknown user", async () => {
    const { creds, auth, node } = await setup()
    const allowed = await ok(node.node.openvpnAuth({ payload: { username: creds.username, password: creds.password } }))
    expect(allowed).toEqual({ username: creds.username, allowed: true, speed_limit_mbps: null })
    for (const body of [
      { username: creds.username, password: "wrong" },
      { username: "u0-nobody", password: creds.password }
    ]) {
      const res = await auth(body)
      expect(res.status).toBe(403)
      expect(res.body).toEqual({ success: false, message: "Forbidden." })
    }
  })

  test("the account password is not the VPN secret", async () => {
    const { user, creds, auth } = await setup()
    expect((await auth({ username: creds.username, password: user.password })).status).toBe(403)
  })

  test("403 when the service may not connect: suspended, over the limit, expired, or not granting this server", async () => {
    const s = await setup(1)
    await app.sql`update services set status = 'suspended' where id = ${s.serviceId}`
    expect((await s.auth({ username: s.creds.username, password: s.creds.password })).status).toBe(403)
    await app.sql`update services set status = 'active' where id = ${s.serviceId}`
    expect((await ok(s.node.node.openvpnAuth({ payload: { username: s.creds.username, password: s.creds.password } }))).allowed).toBe(true)
    await setUsage(app, s.serviceId, month(), GIB)
    expect((await s.auth({ username: s.creds.username, password: s.creds.password })).status).toBe(403)
    await setUsage(app, s.serviceId, month(), 0)
    await app.sql`update services set expires_at = ${new Date(app.clock.get().getTime() - 1000)} where id = ${s.serviceId}`
    expect((await s.auth({ username: s.creds.username, password: s.creds.password })).status).toBe(403)
    const other = await setup()
    // the right pair on another plan's server
    const res = await other.auth({ username: s.creds.username, password: s.creds.password })
    expect(res.status).toBe(403)
  })

  test("422 for missing fields", async () => {
    const { auth } = await setup()
    const res = await auth({})
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ username: ["The username field is required."], password: ["The password field is required."] })
  })
})

describe("POST /v1/node/usage [D54]", () => {
  test("adds deltas by public key (WireGuard node) and by username (OpenVPN node) to the current service's month; accepted counts them", async () => {
    const a = await withPeer()
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [a.plan.planId] })
    const ovpnNode = await typedClient(app, { token: ovpn.nodeToken })
    const creds = await ok(a.me.vpn.vpnCredentials())
    const res = await ok(
      a.node.node.usage({
        payload: [
          { public_key: a.publicKey, rx_bytes: 1000, tx_bytes: 200 },
          { public_key: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", rx_bytes: 1, tx_bytes: 1 }
        ],
        headers: {}
      })
    )
    expect(res).toEqual({ accepted: 1 })
    const byName = await ok(
      ovpnNode.node.usage({
        payload: [
          { username: creds.username, rx_bytes: 5, tx_bytes: 7 },
          { username: "u0-nobody", rx_bytes: 1, tx_bytes: 1 }
        ],
        headers: {}
      })
    )
    expect(byName).toEqual({ accepted: 1 })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1005, tx: 207 })
    const again = await ok(a.node.node.usage({ payload: [{ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 2 }], headers: {} }))
    expect(again.accepted).toBe(1)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1006, tx: 209 })
    const current = await ok(a.me.vpn.currentBandwidth())
    expect(current.used_bytes).toBe(1215)
  })

  test("a peer of another server is not counted by this node; a user without a current service neither", async () => {
    const a = await withPeer()
    const b = await withPeer()
    const res = await ok(b.node.node.usage({ payload: [{ public_key: a.publicKey, rx_bytes: 10, tx_bytes: 10 }], headers: {} }))
    expect(res.accepted).toBe(0)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 0, tx: 0 })
    await app.sql`update services set status = 'cancelled' where id = ${b.serviceId}`
    const res2 = await ok(b.node.node.usage({ payload: [{ public_key: b.publicKey, rx_bytes: 10, tx_bytes: 10 }], headers: {} }))
    expect(res2.accepted).toBe(0)
  })

  test("the month is the current UTC month", async () => {
    const a = await withPeer()
    await app.sql`update services set expires_at = '2027-01-01T00:00:00Z' where id = ${a.serviceId}`
    app.clock.set(new Date("2026-02-28T23:59:59.000Z"))
    try {
      await ok(a.node.node.usage({ payload: [{ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 0 }], headers: {} }))
      app.clock.set(new Date("2026-03-01T00:00:00.000Z"))
      await ok(a.node.node.usage({ payload: [{ public_key: a.publicKey, rx_bytes: 2, tx_bytes: 0 }], headers: {} }))
      const rows = await app.sql<{ period: string; rx: number }>`
        select to_char(period, 'YYYY-MM') as period, rx_bytes as rx from usage_records where service_id = ${a.serviceId} order by period`
      expect(rows.map((r) => [r.period, Number(r.rx)])).toEqual([
        ["2026-02", 1],
        ["2026-03", 2]
      ])
    } finally {
      app.clock.set(new Date("2026-01-15T12:00:00.000Z"))
    }
  })

  test("concurrent reports add up exactly", async () => {
    const a = await withPeer()
    // each answered 200 (else `ok` throws)
    const reports = Array.from({ length: 40 }, (_, i) =>
      ok(a.node.node.usage({ payload: [{ public_key: a.publicKey, rx_bytes: 1000 + i, tx_bytes: 1 }], headers: {} }))
    )
    const responses = await Promise.all(reports)
    expect(responses.every((r) => r.accepted === 1)).toBe(true)
    const expectedRx = Array.from({ length: 40 }, (_, i) => 1000 + i).reduce((x, y) => x + y, 0)
    expect(await usageOf(a.serviceId)).toEqual({ rx: expectedRx, tx: 40 })
  }, 30_000)

  test("422: an object instead of an array, negative or fractional counters, no key nor username", async () => {
    const a = await withPeer()
    const post = (body: unknown) => app.post("/v1/node/usage", { token: a.server.nodeToken, body })
    const obj = await post({ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 1 })
    expect(obj.status).toBe(422)
    expect(obj.body.message).toBe("The given data was invalid.")
    expect(obj.body.errors.body).toEqual(["The body must be a JSON array."])
    const bad = await post([
      { public_key: a.publicKey, rx_bytes: -1, tx_bytes: 1.5 },
      { rx_bytes: 1, tx_bytes: 1 },
      { public_key: a.publicKey, tx_bytes: "3" },
      7
    ])
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({
      "0.rx_bytes": ["The 0.rx_bytes field must be at least 0."],
      "0.tx_bytes": ["The 0.tx_bytes field must be an integer."],
      "1.public_key": ["The 1.public_key field is required when 1.username is not present."],
      "2.rx_bytes": ["The 2.rx_bytes field is required."],
      "2.tx_bytes": ["The 2.tx_bytes field must be an integer."],
      "3": ["The 3 field must be an object."]
    })
    // nothing counted from a rejected report
    expect(await usageOf(a.serviceId)).toEqual({ rx: 0, tx: 0 })
    const malformed = await app.post("/v1/node/usage", { token: a.server.nodeToken, raw: "[{" })
    expect(malformed.status).toBe(422)
    const tooMany = await post(Array.from({ length: 10_001 }, () => ({ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 1 })))
    expect(tooMany.status).toBe(422)
    expect(tooMany.body.errors).toEqual({ body: ["The body must not have more than 10000 items."] })
    expect(await ok(a.node.node.usage({ payload: [], headers: {} }))).toEqual({ accepted: 0 })
  })
})
