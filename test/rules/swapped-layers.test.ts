import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { PromoUses } from "../../src/catalog/PromoUses.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { Recipients } from "../../src/outbox/Recipients.ts"
import type { DomainEvent } from "../../src/events/Events.ts"
import { catalogAdmin, freshAddress } from "../catalog/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { makeTestLayer } from "../support/layers.ts"
import { servicesFixtures } from "../billing/services-fixtures.ts"
import { GIB, makeServer, makeService } from "../vpn/fixtures.ts"

// Issue 24: rule tests through the HTTP API on an app whose ports are swapped for `Test` layers
// (`makeTestLayer`, `makeTestApp({ swap })`): the rule is checked against what the port answers,
// without seeding another room's tables. Both layers are stand-ins of the rooms that provide the
// ports in production (billing's invoices, the webhooks room).

/** the caller's uses of a code, as the stand-in billing room answers them */
let usesOfCaller = 0
/** the events the rooms emitted, as the stand-in webhooks room received them */
const emitted: Array<DomainEvent> = []

const PromoUsesTest = makeTestLayer(PromoUses)({ of: () => Effect.sync(() => usesOfCaller) })
const DomainEventsTest = makeTestLayer(DomainEvents)({
  emit: (event) => Effect.sync(() => void emitted.push(event)),
  wake: Effect.void
})

/** whether the stand-in accounts room says its users want notices, and where they are written to */
let wantsNotices = true
const WATCHER = "quota-watcher@example.test"
const RecipientsTest = makeTestLayer(Recipients)({
  find: (userId) =>
    Effect.sync(() =>
      Option.some({ userId, name: "Watcher", email: WATCHER, emailNotifications: wantsNotices, telegramChatId: null, telegramNotifications: false })
    )
})

let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
beforeAll(async () => {
  app = await makeTestApp({ swap: Layer.mergeAll(PromoUsesTest, DomainEventsTest, RecipientsTest) })
  admin = await catalogAdmin(app)
})
afterAll(() => app.dispose())

describe("[D33] rev. 2: a promo's per-user limit counts the caller's uses as billing reports them (PromoUses swapped)", () => {
  test("under the limit 200, at it 422; an anonymous caller meets only the overall limits", async () => {
    const plan = await admin.createPlan({ name: "Swap plan" })
    const cycle = await admin.createCycle(plan.id, { price: "10.00", currency: "USD" })
    await admin.createPromo({ code: "ONCEEACH", type: "fixed", value: "1.00", max_uses_per_user: 1 })
    const user = await app.createUser()
    const body = { code: "ONCEEACH", plan_id: plan.id, cycle_id: cycle.id }
    const validate = (token?: string) => app.post("/v1/promos/validate", { body, headers: freshAddress(), ...(token === undefined ? {} : { token }) })

    usesOfCaller = 0
    expect((await validate(user.token)).status).toBe(200)
    usesOfCaller = 1
    const refused = await validate(user.token)
    expect(refused.status).toBe(422)
    expect(refused.body.message).toBe("Invalid or expired promo code.")
    expect((await validate()).status).toBe(200)
  })
})

describe("[D90] the device limit, and its events (DomainEvents swapped)", () => {
  test("devices within the plan's limit are created and each emits device.created; the one past it is 422 and emits nothing", async () => {
    const [plan] = await app.sql<{ id: number }>`
      insert into plans (name, description, bandwidth_limit_gb, device_limit) values ('Two devices', 'test', 100, 2) returning id`
    const [cycle] = await app.sql<{ id: number }>`
      insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${plan!.id}, 'Monthly', 30, '9.99', 'USD') returning id`
    const user = await app.createUser()
    await makeService(app, user.id, { planId: plan!.id, cycleId: cycle!.id })
    emitted.length = 0
    const create = (name: string) => app.post("/v1/devices", { token: user.token, body: { name, platform: "ios" } })

    const first = await create("one")
    const second = await create("two")
    expect([first.status, second.status]).toEqual([201, 201])
    const third = await create("three")
    expect(third.status).toBe(422)
    expect(third.body.message).toBe("Device limit reached.")

    expect(emitted.map((e) => e.type)).toEqual(["device.created", "device.created"])
    expect(emitted.map((e) => (e.type === "device.created" ? e.data.user_id : 0))).toEqual([user.id, user.id])
    expect(emitted.map((e) => (e.type === "device.created" ? e.data.id : 0))).toEqual([first.body.data.id, second.body.data.id])

    const deleted = await app.del(`/v1/devices/${first.body.data.id}`, { token: user.token })
    expect(deleted.status).toBe(200)
    expect(emitted.at(-1)).toEqual({ type: "device.deleted", data: { id: first.body.data.id, user_id: user.id } })
  })
})

describe("[D96] quota notices go to the recipient the accounts room names (Recipients swapped)", () => {
  test("a report crossing 80 %: the quota-80 notice is written to that address, and not for one who wants no notices; usage.threshold either way", async () => {
    const fx = servicesFixtures(app)
    const planId = await fx.plan({ name: "Metered swap", bandwidth: 10 })
    const cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "5.00", currency: "EUR" })
    const server = await makeServer(app, { planIds: [planId] })
    const cross = async () => {
      const user = await app.createUser()
      await fx.service({ userId: user.id, planId, cycleId, expiresAt: new Date(Date.now() + 20 * 86_400_000) })
      expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })).status).toBe(200)
      const [peer] = await app.sql<{ public_key: string }>`
        select public_key from wireguard_peers where server_id = ${server.id} and user_id = ${user.id}`
      const report = await app.post("/v1/node/usage", {
        token: server.nodeToken,
        body: [{ public_key: peer!.public_key, rx_bytes: 8.5 * GIB, tx_bytes: 0 }]
      })
      expect(report.status).toBe(200)
      return user
    }
    const quotaMails = () => app.sql<{ recipient: string; dedupe_key: string }>`
      select recipient, dedupe_key from outbox where kind = 'quota-80' order by id`

    wantsNotices = false
    emitted.length = 0
    await cross()
    expect(await quotaMails()).toHaveLength(0)
    expect(emitted.map((e) => e.type)).toEqual(["usage.threshold"])

    wantsNotices = true
    await cross()
    const mails = await quotaMails()
    expect(mails.map((m) => m.recipient)).toEqual([WATCHER])
    expect(emitted.map((e) => e.type)).toEqual(["usage.threshold", "usage.threshold"])
  })
})
