import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"

// The support room's main flows through the typed client (issue 24): tickets, replies from the
// user and from staff, closing, the FAQ ([D60] [D70]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

test("a ticket: create, list, reply, staff reply, read the thread, close [D60]", async () => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })

  const created = await ok(me.support.createTicket({ payload: { subject: "Cannot connect", message: "Handshake times out." } }))
  expect(created).toMatchObject({ subject: "Cannot connect", status: "open" })
  expect(created.created_at).toBeInstanceOf(Date)

  const listed = await ok(me.support.listTickets())
  expect(listed.map((ticket) => ({ id: ticket.id, subject: ticket.subject, status: ticket.status }))).toEqual([
    { id: created.id, subject: "Cannot connect", status: "open" }
  ])

  const reply = await ok(me.support.replyTicket({ path: { ticket: created.id }, payload: { message: "Also on mobile." } }))
  expect(reply).toMatchObject({ message: "Also on mobile.", is_admin: false })
  const answer = await ok(staff.supportAdmin.staffReply({ path: { ticket: created.id }, payload: { message: "Try port 443." } }))
  expect(answer).toMatchObject({ message: "Try port 443.", is_admin: true })

  const thread = await ok(me.support.getTicket({ path: { ticket: created.id } }))
  expect(thread).toMatchObject({ id: created.id, subject: "Cannot connect", status: "open" })
  expect(thread.replies.slice(-2).map((r) => ({ message: r.message, is_admin: r.is_admin }))).toEqual([
    { message: "Also on mobile.", is_admin: false },
    { message: "Try port 443.", is_admin: true }
  ])

  expect(typeof (await ok(me.support.closeTicket({ path: { ticket: created.id } })))).toBe("string")
  expect((await ok(me.support.getTicket({ path: { ticket: created.id } }))).status).toBe("closed")

  // another user's ticket is a 404 as its declared class
  const stranger = await typedClient(app, { token: (await app.createUser()).token })
  expect((await fails(stranger.support.getTicket({ path: { ticket: created.id } })))._tag).toBe("NotFound")
})

test("FAQ: staff add entries; the public list shows the public ones in order [D60] [D70]", async () => {
  const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
  const second = await ok(staff.supportAdmin.createFaq({ payload: { question: "Typed second?", answer: "B", position: 2 } }))
  const first = await ok(staff.supportAdmin.createFaq({ payload: { question: "Typed first?", answer: "A", position: 1 } }))
  const hidden = await ok(staff.supportAdmin.createFaq({ payload: { question: "Typed hidden?", answer: "C", position: 0, is_public: false } }))
  expect(first).toMatchObject({ question: "Typed first?", answer: "A", position: 1, is_public: true })
  expect(hidden.is_public).toBe(false)

  const faq = await ok((await typedClient(app)).support.listFaq())
  const ours = faq.filter((entry) => entry.question.startsWith("Typed "))
  expect(ours).toEqual([
    { id: first.id, question: "Typed first?", answer: "A" },
    { id: second.id, question: "Typed second?", answer: "B" }
  ])
})
