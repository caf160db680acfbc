import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D60] [D13] [D30] [D11] Support tickets through the HTTP API.
let app: TestApp
type User = Awaited<ReturnType<TestApp["createUser"]>>

beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const open = (user: User, subject: string, message = "Help please") => app.post("/v1/tickets", { token: user.token, body: { subject, message } })
/** a user with the typed client of the contract speaking for them */
const signedIn = async () => {
  const user = await app.createUser()
  return { user, me: await typedClient(app, { token: user.token }) }
}
const opened = (me: TypedClient, subject: string, message = "Help please") => ok(me.support.createTicket({ payload: { subject, message } }))

describe("opening and reading tickets [D60]", () => {
  test("POST /v1/tickets answers 201 {id, subject, status, created_at}; the opening message is the first reply", async () => {
    const user = await app.createUser()
    const created = await open(user, "Cannot connect", "The handshake fails.")
    expect(created.status).toBe(201)
    expect(created.body.success).toBe(true)
    expect(Object.keys(created.body.data).sort()).toEqual(["created_at", "id", "status", "subject"])
    expect(created.body.data).toMatchObject({ subject: "Cannot connect", status: "open" })
    expect(created.body.data.created_at).toBe(app.clock.get().toISOString())

    const me = await typedClient(app, { token: user.token })
    const detail = await ok(me.support.getTicket({ path: { ticket: created.body.data.id } }))
    expect(detail).toMatchObject({ id: created.body.data.id, subject: "Cannot connect", status: "open" })
    expect(detail.replies).toHaveLength(1)
    expect(detail.replies[0]).toEqual({
      id: expect.any(Number),
      message: "The handshake fails.",
      is_admin: false,
      created_at: new Date(created.body.data.created_at)
    })
  })

  test("subject and message are stored as sent: HTML is neither interpreted nor stripped [D13]", async () => {
    const { me } = await signedIn()
    const created = await opened(me, "<b>x</b>", "<script>alert(1)</script> & <i>y</i>")
    expect(created.subject).toBe("<b>x</b>")
    const detail = await ok(me.support.getTicket({ path: { ticket: created.id } }))
    expect(detail.subject).toBe("<b>x</b>")
    expect(detail.replies[0]?.message).toBe("<script>alert(1)</script> & <i>y</i>")
    const reply = await ok(me.support.replyTicket({ path: { ticket: created.id }, payload: { message: "<b>x</b>" } }))
    expect(reply.message).toBe("<b>x</b>")
  })

  test("replies come oldest first; last_reply_at is the newest reply's time", async () => {
    const { user, me } = await signedIn()
    const created = await opened(me, "Slow speed", "first")
    const id = created.id
    app.clock.advance(60_000)
    // the reply's wire answer, field by field
    const second = await app.post(`/v1/tickets/${id}/reply`, { token: user.token, body: { message: "second" } })
    expect(second.status).toBe(201)
    expect(second.body.data).toEqual({ id: expect.any(Number), message: "second", is_admin: false, created_at: app.clock.get().toISOString() })
    app.clock.advance(60_000)
    await ok(me.support.replyTicket({ path: { ticket: id }, payload: { message: "third" } }))
    const lastTime = app.clock.get().toISOString()

    const detail = await ok(me.support.getTicket({ path: { ticket: id } }))
    expect(detail.replies.map((r) => r.message)).toEqual(["first", "second", "third"])
    const list = await ok(me.support.listTickets())
    expect(list).toEqual([
      {
        id,
        subject: "Slow speed",
        status: "open",
        created_at: created.created_at,
        last_reply_at: new Date(lastTime)
      }
    ])
    expect(lastTime).not.toBe(created.created_at.toISOString())
  })

  test("the list holds only the caller's tickets, newest activity first", async () => {
    const { me } = await signedIn()
    const { me: other } = await signedIn()
    await ok(other.support.createTicket({ payload: { subject: "Not mine", message: "Help please" } }))
    const a = (await opened(me, "A")).id
    app.clock.advance(1_000)
    const b = (await opened(me, "B")).id
    app.clock.advance(1_000)
    const c = (await opened(me, "C")).id
    let list = await ok(me.support.listTickets())
    expect(list.map((t) => t.id)).toEqual([c, b, a])

    // a reply to the oldest moves it to the top
    app.clock.advance(1_000)
    await ok(me.support.replyTicket({ path: { ticket: a }, payload: { message: "bump" } }))
    list = await ok(me.support.listTickets())
    expect(list.map((t) => t.id)).toEqual([a, c, b])
  })

  test("a user without tickets gets an empty array", async () => {
    const user = await app.createUser()
    const list = await app.get("/v1/tickets", { token: user.token })
    expect(list.body).toEqual({ success: true, data: [] })
  })
})

describe("closing and reopening [D60]", () => {
  test("close answers 200 with a message; closing twice is 200; a reply reopens it", async () => {
    const { user, me } = await signedIn()
    const id = (await opened(me, "Billing question")).id
    // the confirmation's envelope on the wire
    const closed = await app.put(`/v1/tickets/${id}/close`, { token: user.token })
    expect(closed.status).toBe(200)
    expect(closed.body).toEqual({ success: true, message: "Ticket closed.", data: {} })
    expect((await ok(me.support.getTicket({ path: { ticket: id } }))).status).toBe("closed")
    expect((await ok(me.support.listTickets()))[0]?.status).toBe("closed")

    // a second close is the declared 200 answer again
    expect(await ok(me.support.closeTicket({ path: { ticket: id } }))).toBe("Ticket closed.")

    // the declared 201 answer
    await ok(me.support.replyTicket({ path: { ticket: id }, payload: { message: "One more thing" } }))
    expect((await ok(me.support.getTicket({ path: { ticket: id } }))).status).toBe("open")
  })
})

describe("another user's ticket is 404 [D11]", () => {
  test("get, reply and close of another user's ticket, and unknown or impossible ids, answer 404", async () => {
    const { user: owner, me: ownerClient } = await signedIn()
    const intruder = await app.createUser()
    const id = (await opened(ownerClient, "Private")).id
    const notFound = { success: false, message: "Resource not found." }

    const get = await app.get(`/v1/tickets/${id}`, { token: intruder.token })
    expect(get.status).toBe(404)
    expect(get.body).toEqual(notFound)
    const reply = await app.post(`/v1/tickets/${id}/reply`, { token: intruder.token, body: { message: "hi" } })
    expect(reply.status).toBe(404)
    expect(reply.body).toEqual(notFound)
    const close = await app.put(`/v1/tickets/${id}/close`, { token: intruder.token })
    expect(close.status).toBe(404)
    expect(close.body).toEqual(notFound)

    // nothing changed for the owner
    const detail = await ok(ownerClient.support.getTicket({ path: { ticket: id } }))
    expect(detail.status).toBe("open")
    expect(detail.replies).toHaveLength(1)

    expect((await fails(ownerClient.support.getTicket({ path: { ticket: 999999 } })))._tag).toBe("NotFound")
    expect((await app.get("/v1/tickets/abc", { token: owner.token })).status).toBe(404)
    expect((await app.put("/v1/tickets/0/close", { token: owner.token })).status).toBe(404)
  })
})

describe("authentication [D11]", () => {
  test("every ticket route without a token is 401 Unauthenticated.", async () => {
    const { me } = await signedIn()
    const id = (await opened(me, "Mine")).id
    for (const res of [
      await app.get("/v1/tickets"),
      await app.post("/v1/tickets", { body: { subject: "x", message: "y" } }),
      await app.get(`/v1/tickets/${id}`),
      await app.post(`/v1/tickets/${id}/reply`, { body: { message: "y" } }),
      await app.put(`/v1/tickets/${id}/close`),
      await app.get("/v1/tickets", { token: "1|notarealtoken" })
    ]) {
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
    }
  })
})

describe("validation [D13] [D12]", () => {
  test("missing subject and message: 422 with both errors", async () => {
    const user = await app.createUser()
    const res = await app.post("/v1/tickets", { token: user.token, body: {} })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: {
        subject: ["The subject field is required."],
        message: ["The message field is required."]
      }
    })
  })

  test("subject over 255 and message over 10 000 characters: 422; at the limits: 201", async () => {
    const user = await app.createUser()
    const tooLong = await app.post("/v1/tickets", { token: user.token, body: { subject: "s".repeat(256), message: "m".repeat(10_001) } })
    expect(tooLong.status).toBe(422)
    expect(tooLong.body.errors).toEqual({
      subject: ["The subject field must not be greater than 255 characters."],
      message: ["The message field must not be greater than 10000 characters."]
    })
    const me = await typedClient(app, { token: user.token })
    // the declared 201 answer
    const atLimit = await ok(me.support.createTicket({ payload: { subject: "s".repeat(255), message: "m".repeat(10_000) } }))
    expect(atLimit.subject).toHaveLength(255)
  })

  test("empty or non-string fields are 422", async () => {
    const user = await app.createUser()
    const res = await app.post("/v1/tickets", { token: user.token, body: { subject: "", message: 5 } })
    expect(res.status).toBe(422)
    expect(res.body.errors.subject).toEqual(["The subject field is required."])
    expect(res.body.errors.message).toEqual(["The message field must be a string."])
  })

  test("a reply without message, or over 10 000 characters, is 422 and adds nothing", async () => {
    const { user, me } = await signedIn()
    const id = (await opened(me, "Validate replies")).id
    const missing = await app.post(`/v1/tickets/${id}/reply`, { token: user.token, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.body.errors).toEqual({ message: ["The message field is required."] })
    const long = await app.post(`/v1/tickets/${id}/reply`, { token: user.token, body: { message: "m".repeat(10_001) } })
    expect(long.status).toBe(422)
    expect(long.body.errors).toEqual({ message: ["The message field must not be greater than 10000 characters."] })
    const detail = await ok(me.support.getTicket({ path: { ticket: id } }))
    expect(detail.replies).toHaveLength(1)
  })
})

describe("rate limits: 10 a minute per user [D30]", () => {
  test("POST /v1/tickets: the 11th request in a minute is 429 with Retry-After; headers on every answer", async () => {
    const user = await app.createUser()
    for (let i = 1; i <= 10; i++) {
      const res = await open(user, `T${i}`)
      expect(res.status).toBe(201)
      expect(res.headers.get("x-ratelimit-limit")).toBe("10")
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(10 - i))
    }
    const blocked = await open(user, "T11")
    expect(blocked.status).toBe(429)
    expect(blocked.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
    expect(blocked.headers.get("x-ratelimit-limit")).toBe("10")
    expect(blocked.headers.get("x-ratelimit-remaining")).toBe("0")
    const me = await typedClient(app, { token: user.token })
    expect(await ok(me.support.listTickets())).toHaveLength(10)

    // another user has a counter of their own (the declared 201 answer)
    const { me: other } = await signedIn()
    expect((await opened(other, "Mine")).subject).toBe("Mine")

    // a new window a minute later
    app.clock.advance(61_000)
    expect((await opened(me, "Later")).subject).toBe("Later")
  })

  test("POST /v1/tickets/{ticket}/reply: the 11th request in a minute is 429 with Retry-After", async () => {
    const { user, me } = await signedIn()
    const id = (await opened(me, "Chatty")).id
    for (let i = 1; i <= 10; i++) {
      const res = await app.post(`/v1/tickets/${id}/reply`, { token: user.token, body: { message: `r${i}` } })
      expect(res.status).toBe(201)
      expect(res.headers.get("x-ratelimit-limit")).toBe("10")
      expect(res.headers.get("x-ratelimit-remaining")).toBe(String(10 - i))
    }
    const blocked = await app.post(`/v1/tickets/${id}/reply`, { token: user.token, body: { message: "r11" } })
    expect(blocked.status).toBe(429)
    expect(blocked.body.message).toBe("Too Many Attempts.")
    expect(Number(blocked.headers.get("retry-after"))).toBeGreaterThan(0)
    const detail = await ok(me.support.getTicket({ path: { ticket: id } }))
    expect(detail.replies).toHaveLength(11)
  })

  test("the limit runs before validation: invalid requests count, and a limited one is 429 not 422", async () => {
    const user = await app.createUser()
    for (let i = 0; i < 10; i++) {
      expect((await app.post("/v1/tickets", { token: user.token, body: {} })).status).toBe(422)
    }
    expect((await app.post("/v1/tickets", { token: user.token, body: {} })).status).toBe(429)
  })
})
