import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"
import type { PeersBatch } from "../../src/vpn/NodeProtocol.ts"
import { rpcCall, watch } from "../support/node-rpc.ts"
import { makePlan, makeServer, makeService } from "./fixtures.ts"

// [D105]: changes pushed to the node over @effect/rpc (`/v1/node/rpc`, the same server as the API).
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
/** the admin's typed client (issue 35) */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

/** a WireGuard entry's key (an OpenVPN server's entries name usernames) */
const pk = (p: PeersBatch["peers"][number]) => ("public_key" in p ? p.public_key : undefined)
const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

/** a server and a user with a downloaded peer on it */
const setup = async (name?: string) => {
  const plan = await makePlan(app)
  const server = await makeServer(app, { planIds: [plan.planId], ...(name === undefined ? {} : { name }) })
  const join = async () => {
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const devices = await ok(me.vpn.listDevices())
    return { user, me, key: keyOf(conf), deviceId: devices[0]!.id }
  }
  return { plan, server, join }
}

describe("WatchPeers [D105]", () => {
  test("the first batch is the full list, shaped as GET /v1/node/peers; a deleted device arrives as removed within 1 s", async () => {
    const { join, server } = await setup()
    const a = await join()
    const node = await typedClient(app, { token: server.nodeToken })
    const polled = await ok(node.node.peers({ urlParams: {} }))
    const stream = watch(app, server.nodeToken, null)
    try {
      const first = await stream.waitFor(() => true)
      expect(first.full).toBe(true)
      expect(first.revision).toBe(polled.meta.revision)
      // the same entries, from the same code path as the poll
      expect(first.peers).toEqual(polled.data)

      const committed = performance.now()
      expect(await ok(a.me.vpn.deleteDevice({ path: { device: a.deviceId } }))).toBe("Device deleted.")
      const removal = await stream.waitFor((b) => b.peers.some((p) => pk(p) === a.key && "removed" in p))
      expect(removal.full).toBe(false)
      expect(removal.revision).toBeGreaterThan(first.revision)
      expect(removal.peers).toEqual([{ public_key: a.key, removed: true }])
      expect(removal.at - committed).toBeLessThan(1000)
    } finally {
      await stream.close()
    }
  })

  test("a disabled user: the peer arrives disabled; re-enabled: enabled again", async () => {
    const { join, server } = await setup()
    const a = await join()
    const stream = watch(app, server.nodeToken, null)
    try {
      await stream.waitFor(() => true)
      expect((await ok(staff.accountsAdmin.updateUser({ path: { user: a.user.id }, payload: { status: 0 } }))).status).toBe(0)
      await stream.waitFor((b) => b.peers.some((p) => pk(p) === a.key && "enabled" in p && p.enabled === false))
      expect((await ok(staff.accountsAdmin.updateUser({ path: { user: a.user.id }, payload: { status: 1 } }))).status).toBe(1)
      await stream.waitFor((b) => b.peers.some((p) => pk(p) === a.key && "enabled" in p && p.enabled === true) && !b.full)
    } finally {
      await stream.close()
    }
  })

  test("resume by revision: what changed while away, once; nothing when nothing changed", async () => {
    const { join, server } = await setup()
    const a = await join()
    const b = await join()
    const firstStream = watch(app, server.nodeToken, null)
    const first = await firstStream.waitFor(() => true)
    await firstStream.close()

    // away: a's device rotated (old key out, new key in)
    expect((await ok(a.me.vpn.rotateDevice({ path: { device: a.deviceId } }))).data.id).toBe(a.deviceId)
    const resumed = watch(app, server.nodeToken, first.revision)
    try {
      const batch = await resumed.waitFor(() => true)
      expect(batch.full).toBe(false)
      expect(batch.revision).toBeGreaterThan(first.revision)
      expect(batch.peers).toContainEqual({ public_key: a.key, removed: true })
      const added = batch.peers.filter((p) => !("removed" in p))
      expect(added).toHaveLength(1)
      expect(pk(added[0]!)).not.toBe(a.key)
      expect(batch.peers.map(pk)).not.toContain(b.key)
      // nothing more is pushed for that change
      await Bun.sleep(400)
      expect(resumed.batches).toHaveLength(1)

      // resuming from the newest revision: an empty batch at that revision, nothing applied twice
      const again = watch(app, server.nodeToken, batch.revision)
      try {
        expect(await again.waitFor(() => true)).toMatchObject({ revision: batch.revision, full: false, peers: [] })
      } finally {
        await again.close()
      }
    } finally {
      await resumed.close()
    }
  })

  test("an unknown revision: the full list ([D92]'s 422 for the poll)", async () => {
    const { join, server } = await setup()
    await join()
    const stream = watch(app, server.nodeToken, 999_999_999)
    try {
      const first = await stream.waitFor(() => true)
      expect(first.full).toBe(true)
      expect(first.peers).toHaveLength(1)
    } finally {
      await stream.close()
    }
  })

  test("only the node token opens it: none, a wrong one and a user's token are refused (HTTP 401 before any call, issue 34)", async () => {
    const { server } = await setup()
    const user = await app.createUser()
    const status = (e: unknown) => (e as { cause?: { response?: { status?: number } } }).cause?.response?.status
    for (const token of [undefined, "node_wrong_token", user.token]) {
      const stream = watch(app, token, null)
      for (let i = 0; i < 200 && stream.failure() === undefined; i++) await Bun.sleep(10)
      expect(stream.failure()).toMatchObject({ _tag: "RpcClientError" })
      expect(status(stream.failure())).toBe(401)
      expect(stream.batches).toHaveLength(0)
      await stream.close()
      const report = await rpcCall(app, token, (c) => Effect.either(c.ReportApplied({ revision: 1, version: "x" })))
      expect(Either.isLeft(report) && report.left._tag).toBe("RpcClientError")
      expect(Either.isLeft(report) && status(report.left)).toBe(401)
    }
    expect(server.id).toBeGreaterThan(0)
  })
})

describe("the agent on the admin server routes and in /metrics [D105]", () => {
  test("agent: {connected, applied_revision, lag, version, last_seen_at}; connected only while streaming", async () => {
    const name = `push-node-${Date.now()}`
    const { join, server } = await setup(name)
    await join()
    const before = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
    expect(before.agent).toEqual({ connected: false, applied_revision: null, lag: null, version: null, last_seen_at: null })

    const stream = watch(app, server.nodeToken, null)
    try {
      const first = await stream.waitFor(() => true)
      const answer = await rpcCall(app, server.nodeToken, (c) => c.ReportApplied({ revision: first.revision, version: "vpn-api 0.1.0" }))
      expect(answer.lag).toBe(0)
      const shown = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
      expect(shown.agent).toMatchObject({ connected: true, applied_revision: first.revision, lag: 0, version: "vpn-api 0.1.0" })
      expect(shown.agent.last_seen_at).toBeInstanceOf(Date)
      const list = await ok(staff.vpnAdmin.listServers({ urlParams: { page: Math.ceil(server.id / 15) } }))
      const listed = list.data.find((s) => s.id === server.id)
      expect(listed?.agent).toMatchObject({ connected: true, applied_revision: first.revision, lag: 0 })

      // a change the agent has not applied yet: lag 1
      await join()
      await stream.waitFor((b) => b.revision > first.revision)
      const behind = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
      expect(behind.agent.lag).toBeGreaterThan(0)

      const metrics = await app.get("/metrics", { headers: { "x-forwarded-for": "127.0.0.1" } })
      expect(metrics.text).toMatch(new RegExp(`vpn_api_node_agent_connected\\{server="\\d+",server_name="${name}"\\} 1`))
      expect(metrics.text).toMatch(new RegExp(`vpn_api_node_agent_lag_revisions\\{server="\\d+",server_name="push-node-\\d+"\\} [1-9]`))
    } finally {
      await stream.close()
    }
    // the stream's end is seen at once
    for (let i = 0; i < 100; i++) {
      const after = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
      if (after.agent.connected === false) break
      await Bun.sleep(20)
    }
    const after = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
    expect(after.agent.connected).toBe(false)
    const metrics = await app.get("/metrics", { headers: { "x-forwarded-for": "127.0.0.1" } })
    expect(metrics.text).toMatch(/vpn_api_node_agent_connected\{server="\d+",server_name="push-node-\d+"\} 0/)
  })
})
