import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { PeerChanges } from "../../src/vpn/PeerChanges.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { GIB, makePlan, makeServer, makeService, setUsage } from "./fixtures.ts"

// [D92]: node sync by revision, and [D91]: access that follows the account, as the node sees it.
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

interface Entry {
  readonly public_key: string
  readonly allowed_ips?: string
  readonly enabled?: boolean
  readonly removed?: true
}

const poll = async (nodeToken: string, since?: number | string) => {
  const res = await app.get(`/v1/node/peers${since === undefined ? "" : `?since=${since}`}`, { token: nodeToken })
  if (res.status !== 200) throw new Error(`poll: ${res.status} ${res.text}`)
  return { data: res.body.data as Array<Entry>, revision: res.body.meta.revision as number }
}

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

/** a server and a user with a downloaded peer on it */
const setup = async (limitGb = 10) => {
  const plan = await makePlan(app, limitGb)
  const server = await makeServer(app, { planIds: [plan.planId] })
  const join = async () => {
    const user = await app.createUser()
    const serviceId = await makeService(app, user.id, plan)
    const conf = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    expect(conf.status).toBe(200)
    return { user, serviceId, key: keyOf(conf.text) }
  }
  return { plan, server, join }
}

describe("GET /v1/node/peers?since= [D92]", () => {
  test("meta.revision only grows; nothing changed answers an empty list and the same revision", async () => {
    const { join, server } = await setup()
    await join()
    const full = await poll(server.nodeToken)
    expect(full.data).toHaveLength(1)
    expect(typeof full.revision).toBe("number")
    const idle = await poll(server.nodeToken, full.revision)
    expect(idle).toEqual({ data: [], revision: full.revision })
    await join()
    const next = await poll(server.nodeToken, full.revision)
    expect(next.revision).toBeGreaterThan(full.revision)
    expect(next.data).toHaveLength(1)
    expect(next.data[0]).toMatchObject({ enabled: true })
  })

  test("an added peer, a rotated key, a deleted device: changes and removals only", async () => {
    const { join, server } = await setup()
    const a = await join()
    const b = await join()
    const start = await poll(server.nodeToken)

    // rotate a's default device: the old key removed, the new one added
    const devices = (await app.get("/v1/devices", { token: a.user.token })).body.data
    expect((await app.post(`/v1/devices/${devices[0].id}/rotate`, { token: a.user.token })).status).toBe(200)
    const afterRotate = await poll(server.nodeToken, start.revision)
    expect(afterRotate.data).toContainEqual({ public_key: a.key, removed: true })
    const added = afterRotate.data.filter((e) => !e.removed)
    expect(added).toHaveLength(1)
    expect(added[0]!.public_key).not.toBe(a.key)
    expect(added[0]!.enabled).toBe(true)
    expect(afterRotate.data.map((e) => e.public_key)).not.toContain(b.key)

    // b's device deleted: b's key removed
    const bDevices = (await app.get("/v1/devices", { token: b.user.token })).body.data
    expect((await app.del(`/v1/devices/${bDevices[0].id}`, { token: b.user.token })).status).toBe(200)
    const afterDelete = await poll(server.nodeToken, afterRotate.revision)
    expect(afterDelete.data).toEqual([{ public_key: b.key, removed: true }])
  })

  test("derived state: user disabled and enabled, service status, quota exhausted", async () => {
    const { join, server } = await setup(1)
    const a = await join()
    await join()
    let cursor = (await poll(server.nodeToken)).revision
    const step = async () => {
      const r = await poll(server.nodeToken, cursor)
      cursor = r.revision
      return r.data
    }

    expect((await app.put(`/v1/admin/users/${a.user.id}`, { token: admin.token, body: { status: 0 } })).status).toBe(200)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
    expect((await app.put(`/v1/admin/users/${a.user.id}`, { token: admin.token, body: { status: 1 } })).status).toBe(200)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: true })])

    expect((await app.put(`/v1/admin/services/${a.serviceId}`, { token: admin.token, body: { status: "suspended" } })).status).toBe(200)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
    expect((await app.put(`/v1/admin/services/${a.serviceId}`, { token: admin.token, body: { status: "active" } })).status).toBe(200)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: true })])

    const used = await app.post(`/v1/admin/services/${a.serviceId}/usage`, { token: admin.token, body: { bytes: GIB } })
    expect(used.status).toBe(201)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
    // usage below the limit changes nothing the node sees
    expect(await step()).toEqual([])
  })

  test("one usage report of many peers: those that crossed the limit are disabled, each logged once; the rest unchanged (issue 27, migration 40)", async () => {
    const { join, server } = await setup(1)
    const members = []
    for (let i = 0; i < 5; i++) members.push(await join())
    const cursor = (await poll(server.nodeToken)).revision
    const [before] = await app.sql<{ n: number }>`select count(*)::int as n from vpn_peer_changes`
    // one statement writes five usage rows: two cross the 1 GiB limit, three stay under it
    const report = members.map((m, i) => ({ public_key: m.key, rx_bytes: i < 2 ? GIB : 1000, tx_bytes: 0 }))
    const res = await app.post("/v1/node/usage", { token: server.nodeToken, body: report })
    expect(res.status).toBe(200)
    const [after] = await app.sql<{ n: number }>`select count(*)::int as n from vpn_peer_changes`
    expect(after!.n - before!.n).toBe(2)
    const changed = await poll(server.nodeToken, cursor)
    expect(changed.data.map((e) => [e.public_key, e.enabled]).sort()).toEqual(
      [
        [members[0]!.key, false],
        [members[1]!.key, false]
      ].sort()
    )
    // the crossings are written at commit and then gone: nothing waits in the table
    const [left] = await app.sql<{ n: number }>`select count(*)::int as n from vpn_usage_crossings`
    expect(left!.n).toBe(0)
    // more usage of an exhausted peer and of one under the limit: no crossing, nothing logged
    const again = await app.post("/v1/node/usage", { token: server.nodeToken, body: [report[0], report[3]] })
    expect(again.status).toBe(200)
    expect(await poll(server.nodeToken, changed.revision)).toEqual({ data: [], revision: changed.revision })
  })

  test("a plan that stops granting the server changes every peer of it", async () => {
    const { join, server, plan } = await setup()
    const a = await join()
    const start = await poll(server.nodeToken)
    await app.sql`delete from server_plans where server_id = ${server.id} and plan_id = ${plan.planId}`
    expect((await poll(server.nodeToken, start.revision)).data).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
  })

  test("an unknown or malformed cursor is 422 errors.since", async () => {
    const { server } = await setup()
    const { revision } = await poll(server.nodeToken)
    for (const since of [String(revision + 1000), "abc", "-1", "1.5"]) {
      const res = await app.get(`/v1/node/peers?since=${since}`, { token: server.nodeToken })
      expect(res.status).toBe(422)
      expect(Object.keys(res.body.errors)).toEqual(["since"])
    }
  })

  test("the jobs keep the newest revisions: a cursor older than what is kept is 422, the full list then works", async () => {
    const { join, server } = await setup()
    await join()
    const { revision: old } = await poll(server.nodeToken)
    await join()
    await join()
    const { revision: head } = await poll(server.nodeToken)
    // keep only the newest revision: everything up to head - 1 goes (this month's marker stays)
    expect(await app.run(PeerChanges.prune(1))).toBeGreaterThan(0)
    const res = await app.get(`/v1/node/peers?since=${old}`, { token: server.nodeToken })
    expect(res.status).toBe(422)
    expect(res.body.errors.since).toEqual(["The since field is unknown or too old: fetch the full list."])
    const full = await poll(server.nodeToken)
    expect(full.data).toHaveLength(3)
    expect(full.revision).toBe(head)
    expect(await poll(server.nodeToken, head)).toEqual({ data: [], revision: head })
    // the default keeps a million revisions: a jobs run deletes nothing here
    expect(await app.run(PeerChanges.prune())).toBe(0)
  })

  test("a month later, every peer is sent again (usage limits start again)", async () => {
    const { join, server } = await setup(1)
    const a = await join()
    await setUsage(app, a.serviceId, app.clock.get().toISOString().slice(0, 7), 2 * GIB)
    const before = await poll(server.nodeToken)
    expect(before.data[0]!.enabled).toBe(false)
    const now = app.clock.get()
    app.clock.set(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 2)))
    const later = await poll(server.nodeToken, before.revision)
    expect(later.data).toEqual([expect.objectContaining({ public_key: a.key })])
    app.clock.set(now)
  })
})

describe("access follows the account on the node [D91]", () => {
  test("POST /v1/account/vpn/revoke-all rotates every device: keys and secrets", async () => {
    const plan = await makePlan(app)
    const wg = await makeServer(app, { planIds: [plan.planId] })
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const made = await Promise.all(
      ["A", "B"].map(async (name) => (await app.post("/v1/devices", { token: user.token, body: { name, platform: "linux" } })).body.data)
    )
    const keys = await Promise.all(made.map(async (d) => keyOf((await app.get(`/v1/devices/${d.id}/wireguard/${wg.id}`, { token: user.token })).text)))
    const revoked = await app.post("/v1/account/vpn/revoke-all", { token: user.token })
    expect(revoked.status).toBe(200)
    expect(revoked.body.message).toBe("VPN access revoked.")
    const listed = (await poll(wg.nodeToken)).data.map((e) => e.public_key)
    for (const key of keys) expect(listed).not.toContain(key)
    for (const d of made) {
      const auth = await app.post("/v1/node/openvpn/auth", { token: ovpn.nodeToken, body: { username: d.openvpn.username, password: d.openvpn.password } })
      expect(auth.status).toBe(403)
    }
  })

  test("a deleted account's peers leave the node's list", async () => {
    const { join, server } = await setup()
    const a = await join()
    const start = await poll(server.nodeToken)
    await app.sql`delete from users where id = ${a.user.id}`
    expect((await poll(server.nodeToken, start.revision)).data).toEqual([{ public_key: a.key, removed: true }])
    expect((await poll(server.nodeToken)).data.map((e) => e.public_key)).not.toContain(a.key)
  })
})
