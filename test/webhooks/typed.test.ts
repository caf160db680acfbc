import { afterAll, beforeAll, expect, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { anyAddress, freshEmail, PASSWORD } from "../accounts/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"

// Outgoing webhooks through the typed client (issue 24): an admin creates, reads, lists and
// updates an endpoint, sees a delivery in the log, redelivers it, and deletes the endpoint
// ([D101]). The receiver is a local Bun server (private addresses allowed for this app).
let app: TestApp
const received: Array<{ id: string; type: string; data: Record<string, unknown> }> = []
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: async (request) => {
    received.push(JSON.parse(await request.text()))
    return new Response("ok")
  }
})
beforeAll(async () => {
  app = await makeTestApp({ config: { webhooksAllowPrivate: true } })
})
afterAll(async () => {
  server.stop(true)
  await app.dispose()
})

const waitUntil = async (check: () => boolean, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs
  while (!check() && Date.now() < deadline) await Bun.sleep(20)
  return check()
}

test("endpoint: create with its secret once, get, list, update, deliveries, redeliver, delete [D101]", async () => {
  const admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  const url = `http://127.0.0.1:${server.port}/hook`
  const created = await ok(admin.webhooksAdmin.createWebhook({ payload: { url, events: ["user.registered"], description: "CRM" } }))
  expect(created).toMatchObject({ url, events: ["user.registered"], description: "CRM" })
  expect(created.secret.length).toBeGreaterThanOrEqual(32)

  const got = await ok(admin.webhooksAdmin.getWebhook({ path: { id: created.id } }))
  expect(got).toEqual({ id: created.id, url, events: ["user.registered"], description: "CRM", created_at: created.created_at, updated_at: got.updated_at })
  expect("secret" in got).toBe(false)
  const list = await ok(admin.webhooksAdmin.listWebhooks({ urlParams: {} }))
  expect(list.data.map((hook) => hook.id)).toEqual([created.id])

  const updated = await ok(
    admin.webhooksAdmin.updateWebhook({ path: { id: created.id }, payload: { events: ["user.registered", "ticket.created"], description: null } })
  )
  expect(updated).toMatchObject({ id: created.id, url, events: ["user.registered", "ticket.created"], description: null })

  // an event the endpoint subscribed to: a user registers through the typed client
  const email = freshEmail("hooked")
  await ok(
    (await typedClient(app, { headers: anyAddress() })).accounts.register({
      payload: { name: "Hooked", email, password: PASSWORD, password_confirmation: PASSWORD }
    })
  )
  await app.run(runJobsOnce)
  expect(await waitUntil(() => received.length >= 1)).toBe(true)
  expect(received[0]).toMatchObject({ type: "user.registered", data: { email } })

  const log = await ok(admin.webhooksAdmin.listWebhookDeliveries({ path: { id: created.id }, urlParams: {} }))
  expect(log.data.length).toBe(1)
  const delivery = log.data[0]!
  expect(delivery).toMatchObject({ event_id: received[0]!.id, type: "user.registered", status: "delivered" })
  expect(delivery.attempts.map((attempt) => attempt.status_code)).toEqual([200])

  const queued = await ok(admin.webhooksAdmin.redeliverWebhook({ path: { id: created.id, delivery: delivery.id } }))
  expect(queued.data.id).toBe(delivery.id)
  expect(await waitUntil(() => received.length >= 2)).toBe(true)
  expect(received[1]!.id).toBe(delivery.event_id)

  expect(typeof (await ok(admin.webhooksAdmin.deleteWebhook({ path: { id: created.id } })))).toBe("string")
  expect((await fails(admin.webhooksAdmin.getWebhook({ path: { id: created.id } })))._tag).toBe("NotFound")
})
