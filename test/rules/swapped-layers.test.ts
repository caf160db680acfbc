import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PromoUses } from "../../src/catalog/PromoUses.ts"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import type { DomainEvent } from "../../src/events/Events.ts"
import { catalogAdmin, freshAddress } from "../catalog/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { makeTestLayer } from "../support/layers.ts"
import { makeService } from "../vpn/fixtures.ts"

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

let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
beforeAll(async () => {
  app = await makeTestApp({ swap: Layer.mergeAll(PromoUsesTest, DomainEventsTest) })
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
    const validate = (token?: string) =>
      app.post("/v1/promos/validate", { body, headers: freshAddress(), ...(token === undefined ? {} : { token }) })

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
    expect(emitted.map((e) => e.type === "device.created" ? e.data.user_id : 0)).toEqual([user.id, user.id])
    expect(emitted.map((e) => e.type === "device.created" ? e.data.id : 0)).toEqual([first.body.data.id, second.body.data.id])

    const deleted = await app.del(`/v1/devices/${first.body.data.id}`, { token: user.token })
    expect(deleted.status).toBe(200)
    expect(emitted.at(-1)).toEqual({ type: "device.deleted", data: { id: first.body.data.id, user_id: user.id } })
  })
})
