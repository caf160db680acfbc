import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { GIB, makeServer, makeService, openvpnAuthOf } from "./fixtures.ts"

// [D103]: node entries carry the speed of the peer's plan, and a change of that speed is a change
// of each peer; [D104]: `quota_action` / `throttle_mbps` on plans, and a throttled service stays
// on the node at the throttle speed with no 423.
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
  readonly speed_limit_mbps?: number | null
  readonly removed?: true
}

const poll = async (nodeToken: string, since?: number) => {
  const res = await app.get(`/v1/node/peers${since === undefined ? "" : `?since=${since}`}`, { token: nodeToken })
  if (res.status !== 200) throw new Error(`poll: ${res.status} ${res.text}`)
  return { data: res.body.data as Array<Entry>, revision: res.body.meta.revision as number }
}

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

let planCounter = 0
/** a plan made through the admin route, with one cycle */
const plan = async (body: Record<string, unknown>) => {
  const made = await app.post("/v1/admin/plans", { token: admin.token, body: { name: `Shaped ${++planCounter}`, ...body } })
  if (made.status !== 201) throw new Error(`plan: ${made.status} ${made.text}`)
  const cycle = await app.post(`/v1/admin/plans/${made.body.data.id}/cycles`, {
    token: admin.token,
    body: { name: "Monthly", duration_days: 30, price: "5.00", currency: "USD" }
  })
  if (cycle.status !== 201) throw new Error(`cycle: ${cycle.status} ${cycle.text}`)
  return { planId: made.body.data.id as number, cycleId: cycle.body.data.id as number }
}

/** a subscriber of the plan with a downloaded peer on the server */
const member = async (p: { planId: number; cycleId: number }, server: { id: number }) => {
  const user = await app.createUser()
  const serviceId = await makeService(app, user.id, p)
  const conf = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
  expect(conf.status).toBe(200)
  return { user, serviceId, key: keyOf(conf.text) }
}

describe("plans carry quota_action and throttle_mbps [D104]", () => {
  test("default suspend with no throttle speed; throttle with a speed; shown publicly", async () => {
    const plain = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Plain" } })
    expect(plain.status).toBe(201)
    expect(plain.body.data).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
    const made = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Soft", quota_action: "throttle", throttle_mbps: 2 } })
    expect(made.status).toBe(201)
    expect(made.body.data).toMatchObject({ quota_action: "throttle", throttle_mbps: 2 })
    expect((await app.get(`/v1/plans/${made.body.data.id}`)).body.data).toMatchObject({ quota_action: "throttle", throttle_mbps: 2 })
    const listed = (await app.get("/v1/plans")).body.data.find((p: { id: number }) => p.id === made.body.data.id)
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
    expect((await create({ quota_action: "throttle", throttle_mbps: 10_000 })).status).toBe(201)
  })

  test("updates are read over the plan: a speed needs throttle, suspend drops the speed", async () => {
    const made = await app.post("/v1/admin/plans", { token: admin.token, body: { name: "Switch" } })
    const id = made.body.data.id
    const put = (body: Record<string, unknown>) => app.put(`/v1/admin/plans/${id}`, { token: admin.token, body })
    const onSuspend = await put({ throttle_mbps: 3 })
    expect(onSuspend.status).toBe(422)
    expect(onSuspend.body.errors).toEqual({ throttle_mbps: ["The throttle mbps field is prohibited unless quota action is throttle."] })
    const noSpeed = await put({ quota_action: "throttle" })
    expect(noSpeed.status).toBe(422)
    expect(noSpeed.body.errors).toEqual({ throttle_mbps: ["The throttle mbps field is required when quota action is throttle."] })
    expect((await put({ quota_action: "throttle", throttle_mbps: 3 })).body.data).toMatchObject({ quota_action: "throttle", throttle_mbps: 3 })
    // the speed alone on a throttle plan changes it; clearing it is refused
    expect((await put({ throttle_mbps: 4 })).body.data).toMatchObject({ quota_action: "throttle", throttle_mbps: 4 })
    expect((await put({ throttle_mbps: null })).status).toBe(422)
    const back = await put({ quota_action: "suspend" })
    expect(back.status).toBe(200)
    expect(back.body.data).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
    expect((await app.get(`/v1/plans/${id}`)).body.data).toMatchObject({ quota_action: "suspend", throttle_mbps: null })
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

    const changed = await app.put(`/v1/admin/plans/${limited.planId}`, { token: admin.token, body: { speed_limit_mbps: 5 } })
    expect(changed.status).toBe(200)
    const next = await poll(server.nodeToken, full.revision)
    expect(next.revision).toBeGreaterThan(full.revision)
    expect(next.data).toContainEqual(expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 5 }))

    // the limit lifted: null again
    await app.put(`/v1/admin/plans/${limited.planId}`, { token: admin.token, body: { speed_limit_mbps: null } })
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
    for (const [p, speed] of [
      [limited, 25],
      [open, null]
    ] as const) {
      const user = await app.createUser()
      await makeService(app, user.id, p)
      const creds = (await app.get("/v1/account/vpn-credentials", { token: user.token })).body.data
      const res = await openvpnAuthOf(app, server.nodeToken, creds.username, creds.password)
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ username: creds.username, allowed: true, speed_limit_mbps: speed })
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
    expect((await app.get("/v1/bandwidth/current", { token: a.user.token })).body.data.throttled).toBe(false)

    for (const who of [a, b]) {
      const used = await app.post(`/v1/admin/services/${who.serviceId}/usage`, { token: admin.token, body: { bytes: GIB } })
      expect(used.status).toBe(201)
    }
    const next = await poll(server.nodeToken, start.revision)
    expect(next.data).toContainEqual({ public_key: a.key, allowed_ips: expect.any(String), enabled: true, speed_limit_mbps: 2 })
    expect(next.data).toContainEqual({ public_key: b.key, allowed_ips: expect.any(String), enabled: false, speed_limit_mbps: null })

    const current = await app.get("/v1/bandwidth/current", { token: a.user.token })
    expect(current.body.data).toMatchObject({ percentage: 100, throttled: true })
    expect((await app.get(`/v1/services/${a.serviceId}/bandwidth`, { token: a.user.token })).body.data.throttled).toBe(true)
    expect((await app.get("/v1/bandwidth/current", { token: b.user.token })).body.data.throttled).toBe(false)

    // no download is refused for the quota of a throttle plan; the suspend plan's still is
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: a.user.token })).status).toBe(200)
    const refused = await app.get(`/v1/servers/${server.id}/wireguard`, { token: b.user.token })
    expect(refused.status).toBe(423)
    expect(refused.body.message).toBe("Bandwidth limit exceeded.")

    // OpenVPN: allowed, at the throttle speed
    const creds = (await app.get("/v1/account/vpn-credentials", { token: a.user.token })).body.data
    const auth = await openvpnAuthOf(app, ovpn.nodeToken, creds.username, creds.password)
    expect(auth.status).toBe(200)
    expect(auth.body.data.speed_limit_mbps).toBe(2)

    // the plan's own limit when it is lower than the throttle speed
    await app.put(`/v1/admin/plans/${soft.planId}`, { token: admin.token, body: { speed_limit_mbps: 1 } })
    expect((await poll(server.nodeToken, next.revision)).data).toContainEqual(
      expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 1 })
    )
  })

  test("a throttle plan switched to suspend takes an over-quota service off the node", async () => {
    const soft = await plan({ bandwidth_limit_gb: 1, quota_action: "throttle", throttle_mbps: 3 })
    const server = await makeServer(app, { planIds: [soft.planId] })
    const a = await member(soft, server)
    await app.post(`/v1/admin/services/${a.serviceId}/usage`, { token: admin.token, body: { bytes: GIB } })
    const start = await poll(server.nodeToken)
    expect(start.data).toEqual([expect.objectContaining({ public_key: a.key, enabled: true, speed_limit_mbps: 3 })])
    await app.put(`/v1/admin/plans/${soft.planId}`, { token: admin.token, body: { quota_action: "suspend" } })
    expect((await poll(server.nodeToken, start.revision)).data).toEqual([
      expect.objectContaining({ public_key: a.key, enabled: false, speed_limit_mbps: null })
    ])
    expect((await app.get("/v1/bandwidth/current", { token: a.user.token })).body.data.throttled).toBe(false)
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: a.user.token })).status).toBe(423)
  })
})
