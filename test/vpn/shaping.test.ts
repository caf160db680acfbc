import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import type { CreatePlanPayload, UpdatePlanPayload } from "../../src/catalog/Api.ts"
import type { NodeSyncBody } from "../../src/vpn/NodeApi.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, type TypedClient } from "../support/typed.ts"
import { GIB, makeServer, makeService } from "./fixtures.ts"

// [D103]: node entries carry the speed of the peer's plan, and a change of that speed is a change
// of each peer; [D104]: `quota_action` / `throttle_mbps` on plans, and a throttled service stays
// on the node at the throttle speed with no 423.
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
/** the admin's typed client, and a visitor's (issue 35) */
let staff: TypedClient
let visitor: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
  visitor = await typedClient(app)
})
afterAll(() => app.dispose())

interface Entry {
  readonly public_key: string
  readonly allowed_ips?: string
  readonly enabled?: boolean
  readonly speed_limit_mbps?: number | null
  readonly removed?: true
}

/** an entry of the node list, as the typed client decodes it */
type NodeEntry = (typeof NodeSyncBody.Type)["data"][number]

const poll = async (nodeToken: string, since?: number) => {
  const node = await typedClient(app, { token: nodeToken })
  const page = await ok(node.node.peers({ urlParams: since === undefined ? {} : { since: String(since) } }))
  // a WireGuard server's entries all name a key ([D106]'s credentials are an OpenVPN server's)
  const data: ReadonlyArray<Entry> = page.data.filter((e): e is Extract<NodeEntry, { readonly public_key: string }> => "public_key" in e)
  if (data.length !== page.data.length) throw new Error(`poll: an entry without a key ${JSON.stringify(page.data)}`)
  return { data, revision: page.meta.revision }
}

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

let planCounter = 0
/** a plan made through the admin route, with one cycle */
const plan = async (fields: Omit<typeof CreatePlanPayload.Type, "name">) => {
  const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: `Shaped ${++planCounter}`, ...fields } }))
  // untyped: the typed `price` is in cents but is sent as is (a decimal of the currency) on the wire
  const cycle = await app.post(`/v1/admin/plans/${made.id}/cycles`, {
    token: admin.token,
    body: { name: "Monthly", duration_days: 30, price: "5.00", currency: "USD" }
  })
  if (cycle.status !== 201) throw new Error(`cycle: ${cycle.status} ${cycle.text}`)
  return { planId: made.id, cycleId: cycle.body.data.id as number }
}

/** a subscriber of the plan with a downloaded peer on the server */
const member = async (p: { planId: number; cycleId: number }, server: { id: number }) => {
  const user = await app.createUser()
  const serviceId = await makeService(app, user.id, p)
  const me = await typedClient(app, { token: user.token })
  const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
  return { user, me, serviceId, key: keyOf(conf) }
}

describe("plans carry quota_action and throttle_mbps [D104]", () => {
  test("default suspend with no throttle speed; throttle with a speed; shown publicly", async () => {
    const plain = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Plain" } }))
    expect(plain).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
    const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Soft", quota_action: "throttle", throttle_mbps: 2 } }))
    expect(made).toMatchObject({ quota_action: "throttle", throttle_mbps: 2 })
    expect(await ok(visitor.catalog.getPlan({ path: { plan: made.id } }))).toMatchObject({ quota_action: "throttle", throttle_mbps: 2 })
    const listed = (await ok(visitor.catalog.listPlans())).find((p) => p.id === made.id)
    expect(listed).toMatchObject({ quota_action: "throttle", throttle_mbps: 2 })
  })

  test("422 errors.quota_action / errors.throttle_mbps on create", async () => {
    const create = (body: Record<string, unknown>) => app.post("/v1/admin/plans", { token: admin.token, body: { name: "Bad", ...body } })
    const cases: Array<[Record<string, unknown>, Record<string, Array<string>>]> = [
      [{ quota_action: "cut" }, { quota_action: ["The selected quota action is invalid."] }],
      [{ quota_action: null }, { quota_action: ["The selected quota action is invalid."] }],
      [{ quota_action: "throttle" }, { throttle_mbps: ["The throttle mbps field is required when quota action is throttle."] }],
      [{ quota_action: "throttle", throttle_mbps: null }, { throttle_mbps: ["The throttle mbps field is required when quota action is throttle."] }],
      [{ throttle_mbps: 5 }, { throttle_mbps: ["The throttle mbps field is prohibited unless quota action is throttle."] }],
      [{ quota_action: "suspend", throttle_mbps: 5 }, { throttle_mbps: ["The throttle mbps field is prohibited unless quota action is throttle."] }],
      [{ quota_action: "throttle", throttle_mbps: 0 }, { throttle_mbps: ["The throttle mbps field must be at least 1."] }],
      [{ quota_action: "throttle", throttle_mbps: 10_001 }, { throttle_mbps: ["The throttle mbps field must not be greater than 10000."] }],
      [{ quota_action: "throttle", throttle_mbps: 2.5 }, { throttle_mbps: ["The throttle mbps field must be an integer."] }],
      [{ quota_action: "throttle", throttle_mbps: "5" }, { throttle_mbps: ["The throttle mbps field must be an integer."] }]
    ]
    for (const [body, errors] of cases) {
      const res = await create(body)
      expect(res.status).toBe(422)
      expect(res.body.success).toBe(false)
      expect(res.body.errors).toEqual(errors)
    }
    expect(await ok(staff.catalogAdmin.createPlan({ payload: { name: "Bad", quota_action: "throttle", throttle_mbps: 10_000 } }))).toMatchObject({
      quota_action: "throttle",
      throttle_mbps: 10_000
    })
  })

  test("updates are read over the plan: a speed needs throttle, suspend drops the speed", async () => {
    const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Switch" } }))
    const id = made.id
    const put = (body: Record<string, unknown>) => app.put(`/v1/admin/plans/${id}`, { token: admin.token, body })
    const onSuspend = await put({ throttle_mbps: 3 })
    expect(onSuspend.status).toBe(422)
    expect(onSuspend.body.errors).toEqual({ throttle_mbps: ["The throttle mbps field is prohibited unless quota action is throttle."] })
    const noSpeed = await put({ quota_action: "throttle" })
    expect(noSpeed.status).toBe(422)
    expect(noSpeed.body.errors).toEqual({ throttle_mbps: ["The throttle mbps field is required when quota action is throttle."] })
    const update = (payload: typeof UpdatePlanPayload.Type) => ok(staff.catalogAdmin.updatePlan({ path: { plan: id }, payload }))
    expect(await update({ quota_action: "throttle", throttle_mbps: 3 })).toMatchObject({ quota_action: "throttle", throttle_mbps: 3 })
    // the speed alone on a throttle plan changes it; clearing it is refused
    expect(await update({ throttle_mbps: 4 })).toMatchObject({ quota_action: "throttle", throttle_mbps: 4 })
    expect((await put({ throttle_mbps: null })).status).toBe(422)
    const back = await update({ quota_action: "suspend" })
    expect(back).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
    expect(await ok(visitor.catalog.getPlan({ path: { plan: id } }))).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
  })
})

describe("node entries carry speed_limit_mbps [D103]", () => {
  test("the plan's limit (null: none) in the full list; a change of the limit returns each peer in ?since=", async () => {
    const limited = await plan({ speed_limit_mbps: 10 })
    const open = await plan({})
    const server = await makeServer(app, { planIds: [limited.planId, open.planId] })
    const a = await member(limited, server)
    const b = await member(open, server)
    const full = await poll(server.nodeToken)
    expect(full.data).toEqual(
      expect.arrayContaining([
        { public_key: a.key, allowed_ips: expect.any(String), enabled: true, speed_limit_mbps: 10 },
        { public_key: b.key, allowed_ips: expect.any(String), enabled: true, speed_limit_mbps: null }
      ])
    )

    const changed = await ok(staff.catalogAdmin.updatePlan({ path: { plan: limited.planId }, payload: { speed_limit_mbps: 5 } }))
    expect(changed.speed_limit_mbps).toBe(5)
    const next = await poll(server.nodeToken, full.revision)
    expect(next.revision).toBeGreaterThan(full.revision)
    expect(next.data).toContainEqual(expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 5 }))

    // the limit lifted: null again
    await ok(staff.catalogAdmin.updatePlan({ path: { plan: limited.planId }, payload: { speed_limit_mbps: null } }))
    const lifted = await poll(server.nodeToken, next.revision)
    expect(lifted.data).toContainEqual(expect.objectContaining({ public_key: a.key, speed_limit_mbps: null }))
    // nothing else changed: nothing more to say
    expect((await poll(server.nodeToken, lifted.revision)).data).toEqual([])
  })

  test("a service moved to another plan is a change of its peers (no route moves a service yet: by SQL)", async () => {
    const slow = await plan({ speed_limit_mbps: 20 })
    const fast = await plan({ speed_limit_mbps: 200 })
    const server = await makeServer(app, { planIds: [slow.planId, fast.planId] })
    const a = await member(slow, server)
    const start = await poll(server.nodeToken)
    expect(start.data).toContainEqual(expect.objectContaining({ public_key: a.key, speed_limit_mbps: 20 }))
    await app.sql`update services set plan_id = ${fast.planId}, cycle_id = ${fast.cycleId} where id = ${a.serviceId}`
    expect((await poll(server.nodeToken, start.revision)).data).toEqual([expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 200 })])
  })

  test("POST /v1/node/openvpn/auth answers data.speed_limit_mbps", async () => {
    const limited = await plan({ speed_limit_mbps: 25 })
    const open = await plan({})
    const server = await makeServer(app, { protocol: "openvpn", planIds: [limited.planId, open.planId] })
    const node = await typedClient(app, { token: server.nodeToken })
    for (const [p, speed] of [
      [limited, 25],
      [open, null]
    ] as const) {
      const user = await app.createUser()
      await makeService(app, user.id, p)
      const me = await typedClient(app, { token: user.token })
      const creds = await ok(me.vpn.vpnCredentials())
      const res = await ok(node.node.openvpnAuth({ payload: { username: creds.username, password: creds.password } }))
      expect(res).toEqual({ username: creds.username, allowed: true, speed_limit_mbps: speed })
    }
  })
})

describe("throttle instead of cut off [D104]", () => {
  test("over the quota of a throttle plan: still enabled at the throttle speed, no 423, throttled true", async () => {
    const soft = await plan({ bandwidth_limit_gb: 1, speed_limit_mbps: 50, quota_action: "throttle", throttle_mbps: 2 })
    const hard = await plan({ bandwidth_limit_gb: 1, speed_limit_mbps: 50 })
    const server = await makeServer(app, { planIds: [soft.planId, hard.planId] })
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [soft.planId] })
    const a = await member(soft, server)
    const b = await member(hard, server)
    const start = await poll(server.nodeToken)
    expect((await ok(a.me.vpn.currentBandwidth())).throttled).toBe(false)

    for (const who of [a, b]) {
      const used = await ok(staff.vpnAdmin.recordUsage({ path: { service: who.serviceId }, payload: { bytes: GIB } }))
      expect(used.used_bytes).toBe(GIB)
    }
    const next = await poll(server.nodeToken, start.revision)
    expect(next.data).toContainEqual({ public_key: a.key, allowed_ips: expect.any(String), enabled: true, speed_limit_mbps: 2 })
    expect(next.data).toContainEqual({ public_key: b.key, allowed_ips: expect.any(String), enabled: false, speed_limit_mbps: null })

    const current = await ok(a.me.vpn.currentBandwidth())
    expect(current).toMatchObject({ percentage: 100, throttled: true })
    expect((await ok(a.me.vpn.serviceBandwidth({ path: { service: a.serviceId } }))).throttled).toBe(true)
    expect((await ok(b.me.vpn.currentBandwidth())).throttled).toBe(false)

    // no download is refused for the quota of a throttle plan; the suspend plan's still is
    expect(await ok(a.me.vpn.wireguard({ path: { server: server.id } }))).toContain("[Interface]")
    const refused = await app.get(`/v1/servers/${server.id}/wireguard`, { token: b.user.token })
    expect(refused.status).toBe(423)
    expect(refused.body.message).toBe("Bandwidth limit exceeded.")

    // OpenVPN: allowed, at the throttle speed
    const creds = await ok(a.me.vpn.vpnCredentials())
    const ovpnNode = await typedClient(app, { token: ovpn.nodeToken })
    const auth = await ok(ovpnNode.node.openvpnAuth({ payload: { username: creds.username, password: creds.password } }))
    expect(auth.speed_limit_mbps).toBe(2)

    // the plan's own limit when it is lower than the throttle speed
    await ok(staff.catalogAdmin.updatePlan({ path: { plan: soft.planId }, payload: { speed_limit_mbps: 1 } }))
    expect((await poll(server.nodeToken, next.revision)).data).toContainEqual(
      expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 1 })
    )
  })

  test("a throttle plan switched to suspend takes an over-quota service off the node", async () => {
    const soft = await plan({ bandwidth_limit_gb: 1, quota_action: "throttle", throttle_mbps: 3 })
    const server = await makeServer(app, { planIds: [soft.planId] })
    const a = await member(soft, server)
    await ok(staff.vpnAdmin.recordUsage({ path: { service: a.serviceId }, payload: { bytes: GIB } }))
    const start = await poll(server.nodeToken)
    expect(start.data).toEqual([expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 3 })])
    await ok(staff.catalogAdmin.updatePlan({ path: { plan: soft.planId }, payload: { quota_action: "suspend" } }))
    expect((await poll(server.nodeToken, start.revision)).data).toEqual([
      expect.objectContaining({ public_key: a.key, enabled: false, speed_limit_mbps: null })
    ])
    expect((await ok(a.me.vpn.currentBandwidth())).throttled).toBe(false)
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: a.user.token })).status).toBe(423)
  })
})
