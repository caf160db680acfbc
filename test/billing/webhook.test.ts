import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D40] beyond the cases of invoices.test.ts: the signature covers the raw bytes, the body is
// validated after the signature, a replay of the same transaction changes nothing.
let app: TestApp
const SECRET = "whsec_test"
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days) values ('Basic', '', 100, 0)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (1, 'Monthly', 30, '10.00', 'USD')`
})
afterAll(() => app.dispose())

const now = () => Math.floor(app.clock.get().getTime() / 1000)
const sign = (raw: string, t = now(), secret = SECRET) => `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex")}`
const postRaw = (raw: string, signature: string, gateway = "manual") =>
  app.post(`/v1/webhooks/payments/${gateway}`, { raw, headers: { "x-signature": signature, "content-type": "application/json" } })
const send = (body: unknown) => {
  const raw = JSON.stringify(body)
  return postRaw(raw, sign(raw))
}

const order = async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  // the typed client decodes only the declared 201
  const res = await ok(me.billing.placeOrder({ payload: { plan_id: 1, cycle_id: 1 } }))
  return { user, uuid: res.uuid as string }
}

const servicesOf = (userId: number) => app.sql<{ id: number; expires_at: Date }>`select id, expires_at from services where user_id = ${userId} order by id`
const statusOf = async (uuid: string) => (await app.sql<{ status: string }>`select status from invoices where uuid = ${uuid}::uuid`)[0]!.status

describe("the signature covers the raw body [D40]", () => {
  test("a body changed after signing (even whitespace), another secret, or a malformed header: 401, nothing changes", async () => {
    const { user, uuid } = await order()
    const raw = JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-raw-${user.id}` })
    const t = now()
    for (const res of [
      await postRaw(` ${raw}`, sign(raw, t)),
      await postRaw(raw, sign(raw, t, "whsec_other")),
      await postRaw(raw, `v1=${createHmac("sha256", SECRET).update(`${t}.${raw}`).digest("hex")}`),
      await postRaw(raw, `t=${t}`),
      await postRaw(raw, "garbage")
    ]) {
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Invalid signature." })
    }
    // 401 comes before the gateway check: an unsigned call learns nothing
    expect((await postRaw(raw, "garbage", "stripe")).status).toBe(401)
    expect(await statusOf(uuid)).toBe("pending")
    expect(await servicesOf(user.id)).toHaveLength(0)

    // the exact bytes that were signed, pretty-printed or not, are accepted
    const pretty = JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-raw-${user.id}` }, null, 2)
    const ok = await postRaw(pretty, sign(pretty))
    expect(ok.status).toBe(200)
    expect(ok.body.data).toMatchObject({ uuid, status: "paid" })
  })

  test("the timestamp window follows the app clock", async () => {
    const { user, uuid } = await order()
    const raw = JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-clock-${user.id}` })
    const signature = sign(raw)
    app.clock.advance(301_000)
    expect((await postRaw(raw, signature)).status).toBe(401)
    app.clock.advance(-2_000)
    expect((await postRaw(raw, signature)).status).toBe(200)
  })
})

describe("the body, after the signature [D40]", () => {
  test("malformed JSON, a non-object, or missing fields: 422 with errors; nothing changes", async () => {
    const { user, uuid } = await order()
    const bad = await postRaw("{not json", sign("{not json"))
    expect(bad.status).toBe(422)
    expect(bad.body.errors.body).toBeDefined()
    const arr = await postRaw("[1]", sign("[1]"))
    expect(arr.status).toBe(422)
    expect(arr.body.errors.body).toBeDefined()
    const missing = await send({ invoice_uuid: uuid })
    expect(missing.status).toBe(422)
    expect(missing.body.errors.status).toEqual(["The status field is required."])
    expect(missing.body.errors.transaction_id).toEqual(["The transaction id field is required."])
    const failed = await send({ invoice_uuid: uuid, status: "failed", transaction_id: `tx-failed-${user.id}` })
    expect(failed.status).toBe(422)
    expect(failed.body.errors.status).toEqual(["The selected status is invalid."])
    expect(await statusOf(uuid)).toBe("pending")
    const [events] = await app.sql<{ n: number }>`select count(*)::int as n from payment_events where transaction_id like ${`%-${user.id}`}`
    expect(events!.n).toBe(0)
  })

  test("the same transaction again, one after the other: 200 with the paid invoice, one event, one extension", async () => {
    const { user, uuid } = await order()
    const body = { invoice_uuid: uuid, status: "paid", transaction_id: `tx-replay-${user.id}` }
    const first = await send(body)
    expect(first.status).toBe(200)
    const [service] = await servicesOf(user.id)
    app.clock.advance(60_000)
    const second = await send(body)
    expect(second.status).toBe(200)
    expect(second.body.data).toEqual(first.body.data)
    expect(await servicesOf(user.id)).toEqual([service!])
    expect(service!.expires_at.getTime() - (app.clock.get().getTime() - 60_000)).toBe(30 * DAY)
    const [events] = await app.sql<{ n: number }>`select count(*)::int as n from payment_events where transaction_id = ${body.transaction_id}`
    expect(events!.n).toBe(1)
    const [inv] = await app.sql<{ transaction_id: string; paid_at: Date }>`select transaction_id, paid_at from invoices where uuid = ${uuid}::uuid`
    expect(inv!.transaction_id).toBe(body.transaction_id)
  })

  test("a transaction already used on another invoice stays with the first invoice", async () => {
    const a = await order()
    const b = await order()
    const tx = `tx-shared-${a.user.id}`
    expect((await send({ invoice_uuid: a.uuid, status: "paid", transaction_id: tx })).status).toBe(200)
    const reused = await send({ invoice_uuid: b.uuid, status: "paid", transaction_id: tx })
    expect(reused.status).toBe(422)
    expect(reused.body.errors.transaction_id).toBeDefined()
    expect(await statusOf(b.uuid)).toBe("pending")
    expect(await servicesOf(b.user.id)).toHaveLength(0)
  })

  test("an unknown invoice with a correct body: 404", async () => {
    const res = await send({ invoice_uuid: "6f1c0f8e-1111-4222-8333-444455556666", status: "paid", transaction_id: "tx-none" })
    expect(res.status).toBe(404)
  })
})
