import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// The answers are picks of one entity schema each (issue 13): only the spec's fields leave, never
// the owner's id or other stored columns.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const keys = (value: object) => Object.keys(value).sort()

describe("support answers carry exactly the spec's fields [D60] [D70]", () => {
  test("tickets: list item, created, detail and replies", async () => {
    const user = await app.createUser()
    const admin = await app.createUser({ role: "admin" })
    const created = await app.post("/v1/tickets", { token: user.token, body: { subject: "Shape", message: "First" } })
    expect(keys(created.body.data)).toEqual(["created_at", "id", "status", "subject"])
    const id = created.body.data.id as number
    const list = await app.get("/v1/tickets", { token: user.token })
    expect(keys(list.body.data[0])).toEqual(["created_at", "id", "last_reply_at", "status", "subject"])
    const staff = await app.post(`/v1/admin/tickets/${id}/reply`, { token: admin.token, body: { message: "Staff" } })
    expect(keys(staff.body.data)).toEqual(["created_at", "id", "is_admin", "message"])
    const detail = await app.get(`/v1/tickets/${id}`, { token: user.token })
    expect(keys(detail.body.data)).toEqual(["created_at", "id", "replies", "status", "subject"])
    expect(detail.body.data.replies.map(keys)).toEqual([
      ["created_at", "id", "is_admin", "message"],
      ["created_at", "id", "is_admin", "message"]
    ])
  })

  test("FAQ: the public entry and the staff's", async () => {
    const admin = await app.createUser({ role: "admin" })
    const created = await app.post("/v1/admin/faq", { token: admin.token, body: { question: "Q?", answer: "A.", position: 3 } })
    expect(created.status).toBe(201)
    expect(created.body.data).toEqual({ id: expect.any(Number), question: "Q?", answer: "A.", position: 3, is_public: true })
    const list = await app.get("/v1/faq")
    expect(list.body.data.map(keys)).toContainEqual(["answer", "id", "question"])
    expect(list.body.data.every((e: object) => keys(e).length === 3)).toBe(true)
  })
})
