import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D121]: the console's reads: every user's invoices and tickets, the revenue of the last 30 days.
let app: TestApp
let admin: { id: number; token: string }
const DAY = 86_400_000

beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  await app.sql`insert into plans (name, description, bandwidth_limit_gb, trial_days, is_active) values ('Basic', '', 100, 0, true)`
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (1, 'Monthly', 30, '10.00', 'EUR'), (1, 'Yearly', 365, '99.00', 'USD')`
})
afterAll(() => app.dispose())

const invoice = async (userId: number, body: Record<string, unknown>) =>
  (await app.post(`/v1/admin/users/${userId}/invoices`, { token: admin.token, body })).body.data as { uuid: string; id: number }

describe("GET /v1/admin/invoices", () => {
  test("every user's invoices, newest first, with their owner; user_id and status filter; 15 a page", async () => {
    const a = await app.createUser()
    const b = await app.createUser()
    const first = await invoice(a.id, { plan_id: 1, cycle_id: 1 })
    app.clock.advance(1000)
    const second = await invoice(b.id, { plan_id: 1, cycle_id: 1, status: "paid" })
    const all = await app.get("/v1/admin/invoices", { token: admin.token })
    expect(all.status).toBe(200)
    expect(all.body.data.slice(0, 2).map((i: { uuid: string }) => i.uuid)).toEqual([second.uuid, first.uuid])
    expect(all.body.data[0]).toEqual({
      id: second.id,
      uuid: second.uuid,
      user_id: b.id,
      amount: "10.00",
      refunded_amount: "0.00",
      currency: "EUR",
      status: "paid",
      gateway: "manual",
      created_at: expect.any(String),
      paid_at: expect.any(String)
    })
    expect(all.body.meta).toMatchObject({ current_page: 1, per_page: 15 })
    const ofA = await app.get(`/v1/admin/invoices?user_id=${a.id}`, { token: admin.token })
    expect(ofA.body.data.map((i: { uuid: string }) => i.uuid)).toEqual([first.uuid])
    expect(ofA.body.links.first).toContain(`user_id=${a.id}`)
    const paid = await app.get("/v1/admin/invoices?status=paid", { token: admin.token })
    expect(paid.body.data.every((i: { status: string }) => i.status === "paid")).toBe(true)
    expect((await app.get("/v1/admin/invoices?status=nope", { token: admin.token })).status).toBe(422)
  })

  test("admins only: 401 without a token, 403 for a user", async () => {
    const user = await app.createUser()
    expect((await app.get("/v1/admin/invoices")).status).toBe(401)
    expect((await app.get("/v1/admin/invoices", { token: user.token })).status).toBe(403)
    expect((await app.get("/v1/admin/revenue", { token: user.token })).status).toBe(403)
    expect((await app.get("/v1/admin/tickets", { token: user.token })).status).toBe(403)
  })
})

describe("GET /v1/admin/revenue", () => {
  test("the paid invoices' amounts per UTC day and currency over the last 30 days", async () => {
    const user = await app.createUser()
    const before = (await app.get("/v1/admin/revenue", { token: admin.token })).body.data as Array<{ day: string; currency: string; amount: string }>
    const today = app.clock.get().toISOString().slice(0, 10)
    const todayEur = Number(before.find((r) => r.day === today && r.currency === "EUR")?.amount ?? 0)
    await invoice(user.id, { plan_id: 1, cycle_id: 1, status: "paid" })
    await invoice(user.id, { plan_id: 1, cycle_id: 2, status: "paid" })
    await invoice(user.id, { plan_id: 1, cycle_id: 1 }) // pending: not revenue
    const res = await app.get("/v1/admin/revenue", { token: admin.token })
    expect(res.status).toBe(200)
    const rows = res.body.data as Array<{ day: string; currency: string; amount: string }>
    expect(rows.find((r) => r.day === today && r.currency === "EUR")?.amount).toBe((todayEur + 10).toFixed(2))
    expect(rows.find((r) => r.day === today && r.currency === "USD")?.amount).toBe("99.00")
    // 31 days on, today's takings are out of the window
    app.clock.advance(31 * DAY)
    admin = await app.createUser({ role: "admin" }) // the first admin's token has expired by now
    const later = (await app.get("/v1/admin/revenue", { token: admin.token })).body.data as Array<{ day: string }>
    expect(later.some((r) => r.day === today)).toBe(false)
  })
})

describe("GET /v1/admin/tickets and /v1/admin/tickets/{ticket}", () => {
  test("every user's tickets with their owner, open ones by status; one with its replies; 404 for none", async () => {
    const user = await app.createUser()
    const opened = await app.post("/v1/tickets", { token: user.token, body: { subject: "No handshake", message: "Nothing works" } })
    const id = opened.body.data.id as number
    await app.post(`/v1/admin/tickets/${id}/reply`, { token: admin.token, body: { message: "Try port 443." } })
    const list = await app.get("/v1/admin/tickets?status=open", { token: admin.token })
    expect(list.status).toBe(200)
    expect(list.body.data[0]).toMatchObject({ id, user_id: user.id, subject: "No handshake", status: "open" })
    const detail = await app.get(`/v1/admin/tickets/${id}`, { token: admin.token })
    expect(detail.status).toBe(200)
    expect(detail.body.data.replies.map((r: { message: string; is_admin: boolean }) => [r.message, r.is_admin])).toEqual([
      ["Nothing works", false],
      ["Try port 443.", true]
    ])
    expect((await app.get("/v1/admin/tickets/999999", { token: admin.token })).status).toBe(404)
    await app.put(`/v1/tickets/${id}/close`, { token: user.token })
    const closed = await app.get("/v1/admin/tickets?status=closed", { token: admin.token })
    expect(closed.body.data.map((t: { id: number }) => t.id)).toContain(id)
  })
})
