import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { createHmac } from "node:crypto"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { WEBHOOK_EVENTS } from "../../src/webhooks/Domain.ts"
import { days, servicesFixtures } from "../billing/services-fixtures.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient, withToken } from "../support/typed.ts"
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
/** the admin through the typed client of the contract */
let staff: TypedClient
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
  staff = await typedClient(app, { token: admin.token })
  // the declared 201 answer, with the secret
  const hook = await ok(staff.webhooksAdmin.createWebhook({ payload: { url: `http://127.0.0.1:${server.port}/all`, events: [...WEBHOOK_EVENTS] } }))
  secret = hook.secret
  endpointId = hook.id
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
    const guest = await typedClient(app)
    // the declared 201 answer, with its token
    const registered = withToken(
      await ok(guest.accounts.register({ payload: { name: "Evented", email, password: "Sup3r-Secret-Pass!", password_confirmation: "Sup3r-Secret-Pass!" } }))
    )
    const [event] = await eventsOf("user.registered")
    expect(event!.body.data).toMatchObject({ id: registered.user.id, email, name: "Evented" })
    expect(event!.raw).not.toContain("Sup3r-Secret-Pass!")
    expect(event!.raw).not.toContain(registered.token)
    expect(signedWell(event!)).toBe(true)
  })

  test("invoice.created, invoice.paid and service.activated from an order paid by an admin", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Evented" })
    const cycleId = await fx.cycle(planId, { price: "5.00" })
    const user = await app.createUser()
    const me = await typedClient(app, { token: user.token })
    // the declared 201 answer
    const order = await ok(me.billing.placeOrder({ payload: { plan_id: planId, cycle_id: cycleId } }))
    const uuid = order.uuid
    const [created] = await eventsOf("invoice.created")
    expect(created!.body.data).toMatchObject({ uuid, user_id: user.id, status: "pending", amount: "5.00" })
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
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
      const updated = await ok(staff.servicesAdmin.updateService({ path: { service: serviceId }, payload: { status: "suspended" } }))
      expect(updated.status).toBe("suspended")
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
    const me = await typedClient(app, { token: user.token })
    // the declared 201 and 200 answers
    const device = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
    expect(typeof (await ok(me.vpn.deleteDevice({ path: { device: device.id } })))).toBe("string")
    const [created] = await eventsOf("device.created")
    const [deleted] = await eventsOf("device.deleted")
    expect(created!.body.data).toMatchObject({ id: device.id, name: "Phone", platform: "ios", user_id: user.id })
    // the device's credentials are not in the event
    expect(created!.raw).not.toContain(device.openvpn.password)
    expect(deleted!.body.data).toMatchObject({ id: device.id, user_id: user.id })
  })

  test("usage.threshold at 80 % and at 100 %, once each", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ bandwidth: 10 })
    const cycleId = await fx.cycle(planId)
    const user = await app.createUser()
    const serviceId = await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(app.clock.get(), 20) })
    const vpnServer = await makeServer(app, { planIds: [planId] })
    const me = await typedClient(app, { token: user.token })
    // the config is only the step that makes the peer (its declared 200 answer)
    expect(await ok(me.vpn.wireguard({ path: { server: vpnServer.id } }))).toContain("[Interface]")
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${vpnServer.id}`
    const node = await typedClient(app, { token: vpnServer.nodeToken })
    // the declared 200 answer, the entry counted
    const report = async (bytes: number) =>
      (await ok(node.node.usage({ headers: {}, payload: [{ public_key: peer!.public_key, rx_bytes: bytes, tx_bytes: 0 }] }))).accepted
    expect(await report(8.5 * GIB)).toBe(1)
    expect(await report(GIB / 8)).toBe(1)
    expect(await report(2 * GIB)).toBe(1)
    const events = (await eventsOf("usage.threshold", 2)).filter((e) => e.body.data["service_id"] === serviceId)
    expect(events.map((e) => e.body.data["threshold"])).toEqual([80, 100])
  })

  test("every delivery is logged with its status code and latency; every body validly signed", async () => {
    const log = await ok(staff.webhooksAdmin.listWebhookDeliveries({ path: { id: endpointId }, urlParams: {} }))
    expect(log.meta.total).toBe(received.length)
    for (const d of log.data) {
      expect(d.status).toBe("delivered")
      expect(d.attempts.at(-1)?.status_code).toBe(204)
      expect(typeof d.attempts.at(-1)?.latency_ms).toBe("number")
    }
    for (const e of received) expect(signedWell(e)).toBe(true)
    expect(new Set(received.map((e) => e.body.id)).size).toBe(received.length)
  })
})
