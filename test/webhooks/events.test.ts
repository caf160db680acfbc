import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createHmac } from "node:crypto"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { WEBHOOK_EVENTS } from "../../src/webhooks/Domain.ts"
import { days, servicesFixtures } from "../billing/services-fixtures.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { GIB, makeServer } from "../vpn/fixtures.ts"

// [D101]: each room emits its events inside its own transaction; the endpoint subscribed to all of
// them receives each, with the resource's public fields as `data` and never a secret.
setDefaultTimeout(60_000)

interface Event {
  readonly raw: string
  readonly signature: string
  readonly body: { id: string; type: string; created_at: string; data: Record<string, unknown> }
}

let app: TestApp
let admin: { token: string }
let secret: string
let endpointId: number
const received: Array<Event> = []
let server: ReturnType<typeof Bun.serve>
const start = new Date("2026-05-10T12:00:00.000Z")

beforeAll(async () => {
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
  app.clock.set(start)
  admin = await app.createUser({ role: "admin" })
  server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (req) => {
      const raw = await req.text()
      received.push({ raw, signature: req.headers.get("x-signature") ?? "", body: JSON.parse(raw) })
      return new Response(null, { status: 204 })
    }
  })
  const hook = await app.post("/v1/admin/webhooks", {
    token: admin.token,
    body: { url: `http://127.0.0.1:${server.port}/all`, events: [...WEBHOOK_EVENTS] }
  })
  expect(hook.status).toBe(201)
  secret = hook.body.data.secret
  endpointId = hook.body.data.id
})
afterAll(async () => {
  server.stop(true)
  await app.dispose()
})

/** sends what is due (the jobs would), then the events of `type` received so far */
const eventsOf = async (type: string, atLeast = 1) => {
  const deadline = Date.now() + 5000
  for (;;) {
    await app.run(runJobsOnce)
    const found = received.filter((e) => e.body.type === type)
    if (found.length >= atLeast || Date.now() > deadline) return found
    await Bun.sleep(50)
  }
}

const signedWell = (e: Event) => {
  const parts = new Map(e.signature.split(",").map((p) => p.split("=", 2) as [string, string]))
  return (
    createHmac("sha256", secret)
      .update(`${parts.get("t")}.${e.raw}`)
      .digest("hex") === parts.get("v1")
  )
}

describe("events from every room [D101]", () => {
  test("user.registered: the account's public fields, no password", async () => {
    const email = `events${Date.now()}@example.com`
    const res = await app.post("/v1/auth/register", {
      body: { name: "Evented", email, password: "Sup3r-Secret-Pass!", password_confirmation: "Sup3r-Secret-Pass!" }
    })
    expect(res.status).toBe(201)
    const [event] = await eventsOf("user.registered")
    expect(event!.body.data).toMatchObject({ id: res.body.data.user.id, email, name: "Evented" })
    expect(event!.raw).not.toContain("Sup3r-Secret-Pass!")
    expect(event!.raw).not.toContain(res.body.data.token)
    expect(signedWell(event!)).toBe(true)
  })

  test("invoice.created, invoice.paid and service.activated from an order paid by an admin", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Evented" })
    const cycleId = await fx.cycle(planId, { price: "5.00" })
    const user = await app.createUser()
    const order = await app.post("/v1/orders", { token: user.token, body: { plan_id: planId, cycle_id: cycleId } })
    expect(order.status).toBe(201)
    const uuid = order.body.data.uuid as string
    const [created] = await eventsOf("invoice.created")
    expect(created!.body.data).toMatchObject({ uuid, user_id: user.id, status: "pending", amount: "5.00" })
    expect((await app.post(`/v1/admin/invoices/${uuid}/mark-paid`, { token: admin.token })).status).toBe(200)
    const [paid] = await eventsOf("invoice.paid")
    expect(paid!.body.data).toMatchObject({ uuid, status: "paid" })
    const [activated] = await eventsOf("service.activated")
    expect(activated!.body.data).toMatchObject({ user_id: user.id, plan_id: planId, status: "active" })
    // the order of one endpoint's deliveries is the order of the commits
    const types = received.map((e) => e.body.type)
    expect(types.indexOf("invoice.created")).toBeLessThan(types.indexOf("service.activated"))
    expect(types.indexOf("service.activated")).toBeLessThan(types.indexOf("invoice.paid"))
  })

  test("service.suspended by an admin (once), service.expired by the jobs", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan()
    const cycleId = await fx.cycle(planId)
    const user = await app.createUser()
    const serviceId = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(app.clock.get(), 2) })
    for (let i = 0; i < 2; i++) {
      const res = await app.put(`/v1/admin/services/${serviceId}`, { token: admin.token, body: { status: "suspended" } })
      expect(res.status).toBe(200)
    }
    const suspended = await eventsOf("service.suspended")
    expect(suspended.length).toBe(1)
    expect(suspended[0]!.body.data).toMatchObject({ id: serviceId, status: "suspended" })
    app.clock.set(days(app.clock.get(), 3))
    const expired = await eventsOf("service.expired")
    expect(expired.map((e) => e.body.data["id"])).toContain(serviceId)
  })

  test("device.created and device.deleted", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan()
    const cycleId = await fx.cycle(planId)
    const user = await app.createUser()
    await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(app.clock.get(), 20) })
    const device = await app.post("/v1/devices", { token: user.token, body: { name: "Phone", platform: "ios" } })
    expect(device.status).toBe(201)
    expect((await app.del(`/v1/devices/${device.body.data.id}`, { token: user.token })).status).toBe(200)
    const [created] = await eventsOf("device.created")
    const [deleted] = await eventsOf("device.deleted")
    expect(created!.body.data).toMatchObject({ id: device.body.data.id, name: "Phone", platform: "ios", user_id: user.id })
    // the device's credentials are not in the event
    expect(created!.raw).not.toContain(device.body.data.openvpn.password)
    expect(deleted!.body.data).toMatchObject({ id: device.body.data.id, user_id: user.id })
  })

  test("usage.threshold at 80 % and at 100 %, once each", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ bandwidth: 10 })
    const cycleId = await fx.cycle(planId)
    const user = await app.createUser()
    const serviceId = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(app.clock.get(), 20) })
    const vpnServer = await makeServer(app, { planIds: [planId] })
    expect((await app.get(`/v1/servers/${vpnServer.id}/wireguard`, { token: user.token })).status).toBe(200)
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${vpnServer.id}`
    const report = (bytes: number) =>
      app.post("/v1/node/usage", { token: vpnServer.nodeToken, body: [{ public_key: peer!.public_key, rx_bytes: bytes, tx_bytes: 0 }] })
    expect((await report(8.5 * GIB)).status).toBe(200)
    expect((await report(GIB / 8)).status).toBe(200)
    expect((await report(2 * GIB)).status).toBe(200)
    const events = (await eventsOf("usage.threshold", 2)).filter((e) => e.body.data["service_id"] === serviceId)
    expect(events.map((e) => e.body.data["threshold"])).toEqual([80, 100])
  })

  test("every delivery is logged with its status code and latency; every body validly signed", async () => {
    const log = await app.get(`/v1/admin/webhooks/${endpointId}/deliveries`, { token: admin.token })
    expect(log.status).toBe(200)
    expect(log.body.meta.total).toBe(received.length)
    for (const d of log.body.data) {
      expect(d.status).toBe("delivered")
      expect(d.attempts.at(-1).status_code).toBe(204)
      expect(typeof d.attempts.at(-1).latency_ms).toBe("number")
    }
    for (const e of received) expect(signedWell(e)).toBe(true)
    expect(new Set(received.map((e) => e.body.id)).size).toBe(received.length)
  })
})
