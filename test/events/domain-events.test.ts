import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { DomainEvents } from "../../src/events/DomainEvents.ts"
import { encodeEvent, EVENT_TYPES, type EventData } from "../../src/events/Events.ts"
import { DomainEventsLive } from "../../src/webhooks/Webhooks.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// Issue 24, [D101]: domain events are a typed union behind the DomainEvents port (the webhooks
// room provides it). [D108], [D110], [D111]: service.changed, invoice.refunded and
// service.cancelled are events an endpoint may subscribe to.

let app: TestApp
let admin: { token: string }
/** the admin through the typed client of the contract */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

describe("typed domain events", () => {
  test("an emit with a wrong payload does not compile (checked by `tsc --noEmit`, never run)", () => {
    const typed = (events: DomainEvents["Type"]) => [
      // @ts-expect-error a field of another type
      events.emit({ type: "device.deleted", data: { id: "1", user_id: 2 } }),
      // @ts-expect-error a field missing
      events.emit({ type: "service.cancelled", data: { service_id: 1 } }),
      // @ts-expect-error an event type nobody declared
      events.emit({ type: "device.renamed", data: { id: 1, user_id: 2 } }),
      // @ts-expect-error the payload of another event
      events.emitMany("ticket.created", [{ ticket_id: 1, reply_id: 2, author_id: 3, is_staff: false, message: "m", created_at: "t" }]),
      events.emit({
        type: "service.changed",
        data: { id: 1, user_id: 4, plan_id: 2, cycle_id: 3, kind: "upgrade", starts_at: "2026-11-26T00:00:00.000Z", expires_at: "2026-12-26T00:00:00.000Z" }
      })
    ]
    expect(typeof typed).toBe("function")
  })

  test("what goes out is the payload as its schema encodes it: a field the schema does not name is not sent", () => {
    const withExtra = { id: 7, user_id: 9, private_key: "never sent" } as unknown as EventData<"device.deleted">
    expect(encodeEvent("device.deleted", withExtra)).toEqual({ id: 7, user_id: 9 })
  })

  test("the webhooks room implements the port: an emit is one delivery per subscribed endpoint", async () => {
    // the declared 201 answer
    const hook = await ok(staff.webhooksAdmin.createWebhook({ payload: { url: "http://127.0.0.1:9/cancelled", events: ["service.cancelled"] } }))
    await app.run(
      Effect.flatMap(DomainEvents, (events) =>
        events.emit({
          type: "service.cancelled",
          data: { id: 1, user_id: 2, plan_id: 3, cycle_id: 4, status: "cancelled", at: "now", cancel_at: null, expires_at: "2026-12-26T00:00:00.000Z" }
        })
      ).pipe(Effect.provide(DomainEventsLive))
    )
    const rows = await app.sql<{ type: string }>`select type from webhook_deliveries where endpoint_id = ${hook.id}`
    expect(rows.map((r) => r.type)).toEqual(["service.cancelled"])
  })
})

describe("POST /v1/admin/webhooks: the events it accepts are the domain events", () => {
  test("[D108] [D110] [D111]: service.changed, invoice.refunded, service.cancelled may be subscribed to", async () => {
    // the declared 201 answers
    const created = await ok(
      staff.webhooksAdmin.createWebhook({
        payload: { url: "http://127.0.0.1:9/billing", events: ["service.changed", "invoice.refunded", "service.cancelled"] }
      })
    )
    expect(created.events).toEqual(["service.changed", "invoice.refunded", "service.cancelled"])
    const every = await ok(staff.webhooksAdmin.createWebhook({ payload: { url: "http://127.0.0.1:9/all", events: [...EVENT_TYPES] } }))
    expect(every.events).toHaveLength(14)
  })

  test("a type that is not a domain event is 422 errors.events", async () => {
    const refused = await app.post("/v1/admin/webhooks", {
      token: admin.token,
      body: { url: "http://127.0.0.1:9/x", events: ["service.renamed"] }
    })
    expect(refused.status).toBe(422)
    expect(Object.keys(refused.body.errors)).toEqual(["events"])
  })
})
