import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { PeerChanges } from "../../src/vpn/PeerChanges.ts"
import type { NodeSyncBody } from "../../src/vpn/NodeApi.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"
import { GIB, makePlan, makeServer, makeService, setUsage } from "./fixtures.ts"

// [D92]: node sync by revision, and [D91]: access that follows the account, as the node sees it.
let app: TestApp
/** the admin's typed client (issue 35) */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

interface Entry {
  readonly public_key: string
  readonly allowed_ips?: string
  readonly enabled?: boolean
  readonly removed?: true
}

/** an entry of the node list, as the typed client decodes it */
type NodeEntry = (typeof NodeSyncBody.Type)["data"][number]

const poll = async (nodeToken: string, since?: number | string) => {
  const node = await typedClient(app, { token: nodeToken })
  const page = await ok(node.node.peers({ urlParams: since === undefined ? {} : { since: String(since) } }))
  // a WireGuard server's entries all name a key ([D106]'s credentials are an OpenVPN server's)
  const data: ReadonlyArray<Entry> = page.data.filter((e): e is Extract<NodeEntry, { readonly public_key: string }> => "public_key" in e)
  if (data.length !== page.data.length) throw new Error(`poll: an entry without a key ${JSON.stringify(page.data)}`)
  return { data, revision: page.meta.revision }
}

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

/** a server and a user with a downloaded peer on it */
const setup = async (limitGb = 10) => {
  const plan = await makePlan(app, limitGb)
  const server = await makeServer(app, { planIds: [plan.planId] })
  const join = async () => {
    const user = await app.createUser()
    const serviceId = await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    return { user, me, serviceId, key: keyOf(conf) }
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
    const devices = await ok(a.me.vpn.listDevices())
    expect((await ok(a.me.vpn.rotateDevice({ path: { device: devices[0]!.id } }))).data.id).toBe(devices[0]!.id)
    const afterRotate = await poll(server.nodeToken, start.revision)
    expect(afterRotate.data).toContainEqual({ public_key: a.key, removed: true })
    const added = afterRotate.data.filter((e) => !e.removed)
    expect(added).toHaveLength(1)
    expect(added[0]!.public_key).not.toBe(a.key)
    expect(added[0]!.enabled).toBe(true)
    expect(afterRotate.data.map((e) => e.public_key)).not.toContain(b.key)

    // b's device deleted: b's key removed
    const bDevices = await ok(b.me.vpn.listDevices())
    expect(await ok(b.me.vpn.deleteDevice({ path: { device: bDevices[0]!.id } }))).toBe("Device deleted.")
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

    expect((await ok(staff.accountsAdmin.updateUser({ path: { user: a.user.id }, payload: { status: 0 } }))).status).toBe(0)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
    expect((await ok(staff.accountsAdmin.updateUser({ path: { user: a.user.id }, payload: { status: 1 } }))).status).toBe(1)
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: true })])

    expect((await ok(staff.servicesAdmin.updateService({ path: { service: a.serviceId }, payload: { status: "suspended" } }))).status).toBe("suspended")
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: false })])
    expect((await ok(staff.servicesAdmin.updateService({ path: { service: a.serviceId }, payload: { status: "active" } }))).status).toBe("active")
    expect(await step()).toEqual([expect.objectContaining({ public_key: a.key, enabled: true })])

    const used = await ok(staff.vpnAdmin.recordUsage({ path: { service: a.serviceId }, payload: { bytes: GIB } }))
    expect(used.used_bytes).toBe(GIB)
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
    const node = await typedClient(app, { token: server.nodeToken })
    expect(await ok(node.node.usage({ headers: {}, payload: report }))).toEqual({ accepted: 5 })
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
    expect(await ok(node.node.usage({ headers: {}, payload: [report[0], report[3]] }))).toEqual({ accepted: 2 })
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
    const me = await typedClient(app, { token: user.token })
    const made = await Promise.all(["A", "B"].map((name) => ok(me.vpn.createDevice({ payload: { name, platform: "linux" } }))))
    const keys = await Promise.all(made.map(async (d) => keyOf(await ok(me.vpn.deviceWireguard({ path: { device: d.id, server: wg.id } })))))
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
