import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { Mail } from "../../src/platform/Mailer.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// [D60] [D70] Staff replies with their notification e-mail, and the FAQ.
let app: TestApp
type User = Awaited<ReturnType<TestApp["createUser"]>>
let admin: User
/** the admin through the typed client of the contract */
let staff: TypedClient

beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin", name: "Staff" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

/** a user with the typed client speaking for them */
const signedIn = async () => {
  const user = await app.createUser()
  return { user, me: await typedClient(app, { token: user.token }) }
}
const open = async (me: TypedClient, subject: string, message = "Help please") => (await ok(me.support.createTicket({ payload: { subject, message } }))).id

/** `sendLater` forks the send: poll briefly for a mail to arrive. */
const mailsTo = async (email: string, expected: number): Promise<Array<Mail>> => {
  const deadline = Date.now() + 1_000
  let found = app.outbox.filter((m) => m.to === email)
  while (found.length < expected && Date.now() < deadline) {
    await Bun.sleep(20)
    found = app.outbox.filter((m) => m.to === email)
  }
  return found
}

const setNotifications = (userId: number, on: boolean) =>
  app.sql`
    insert into user_settings (user_id, email_notifications) values (${userId}, ${on})
    on conflict (user_id) do update set email_notifications = excluded.email_notifications`

describe("staff replies [D60] [D70]", () => {
  test("POST /v1/admin/tickets/{ticket}/reply: 201 Reply with is_admin true, shown to the owner, moving last_reply_at", async () => {
    const { me } = await signedIn()
    const id = await open(me, "Router setup")
    app.clock.advance(5 * 60_000)
    const res = await app.post(`/v1/admin/tickets/${id}/reply`, { token: admin.token, body: { message: "Try port 443." } })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: { id: expect.any(Number), message: "Try port 443.", is_admin: true, created_at: app.clock.get().toISOString() }
    })
    const detail = await ok(me.support.getTicket({ path: { ticket: id } }))
    expect(detail.replies.map((r) => r.is_admin)).toEqual([false, true])
    const list = await ok(me.support.listTickets())
    expect(list[0]?.last_reply_at).toEqual(app.clock.get())
  })

  test("a staff reply to a closed ticket reopens it", async () => {
    const { me } = await signedIn()
    const id = await open(me, "Closed too early")
    await ok(me.support.closeTicket({ path: { ticket: id } }))
    // the declared 201 answer
    const reply = await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message: "Still there?" } }))
    expect(reply.is_admin).toBe(true)
    expect((await ok(me.support.getTicket({ path: { ticket: id } }))).status).toBe("open")
  })

  test("the owner is e-mailed when email_notifications is on: subject, reply text and ticket id", async () => {
    const { user, me } = await signedIn()
    await setNotifications(user.id, true)
    const id = await open(me, "DNS leak <test>")
    // the declared 201 answer
    await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message: "Turn on the kill switch.\nThen retest." } }))
    const mails = await mailsTo(user.email, 1)
    expect(mails).toHaveLength(1)
    const mail = mails[0]!
    expect(mail.subject).toContain("DNS leak <test>")
    expect(mail.subject).toContain(`#${id}`)
    expect(mail.text).toContain("Turn on the kill switch.\nThen retest.")
    expect(mail.text).toContain(`#${id}`)
    expect(mail.text).toContain("DNS leak <test>")
  })

  test("no settings row means notifications on (the column's default)", async () => {
    const { user, me } = await signedIn()
    const id = await open(me, "Default settings")
    await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message: "Hello" } }))
    expect(await mailsTo(user.email, 1)).toHaveLength(1)
  })

  test("no e-mail when email_notifications is off; none for the user's own replies either", async () => {
    const { user, me } = await signedIn()
    await setNotifications(user.id, false)
    const id = await open(me, "Quiet please")
    // the declared 201 answers
    await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message: "Noted." } }))
    await ok(me.support.replyTicket({ path: { ticket: id }, payload: { message: "Thanks" } }))
    await Bun.sleep(200)
    expect(app.outbox.filter((m) => m.to === user.email)).toHaveLength(0)

    // turned on again, the next staff reply is mailed
    await setNotifications(user.id, true)
    await ok(staff.supportAdmin.staffReply({ path: { ticket: id }, payload: { message: "Back on." } }))
    const mails = await mailsTo(user.email, 1)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.text).toContain("Back on.")
  })

  test("an unknown ticket is 404; an invalid message is 422", async () => {
    const missing = await app.post("/v1/admin/tickets/999999/reply", { token: admin.token, body: { message: "x" } })
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ success: false, message: "Resource not found." })
    const { me } = await signedIn()
    const id = await open(me, "Validate staff")
    const invalid = await app.post(`/v1/admin/tickets/${id}/reply`, { token: admin.token, body: { message: "" } })
    expect(invalid.status).toBe(422)
    expect(invalid.body.errors).toEqual({ message: ["The message field is required."] })
    const long = await app.post(`/v1/admin/tickets/${id}/reply`, { token: admin.token, body: { message: "m".repeat(10_001) } })
    expect(long.status).toBe(422)
  })

  test("admin routes: 401 without a token, 403 Forbidden. for a non-admin", async () => {
    const { user, me } = await signedIn()
    const id = await open(me, "Not staff")
    for (const [path, body] of [
      [`/v1/admin/tickets/${id}/reply`, { message: "x" }],
      ["/v1/admin/faq", { question: "q", answer: "a" }]
    ] as const) {
      const anonymous = await app.post(path, { body })
      expect(anonymous.status).toBe(401)
      expect(anonymous.body).toEqual({ success: false, message: "Unauthenticated." })
      const forbidden = await app.post(path, { token: user.token, body })
      expect(forbidden.status).toBe(403)
      expect(forbidden.body).toEqual({ success: false, message: "Forbidden." })
    }
    const detail = await ok(me.support.getTicket({ path: { ticket: id } }))
    expect(detail.replies).toHaveLength(1)
  })
})

describe("FAQ [D60] [D70]", () => {
  test("GET /v1/faq needs no token and lists public entries only, by position then id", async () => {
    await app.sql`delete from faq_entries`
    const create = (body: Record<string, unknown>) => app.post("/v1/admin/faq", { token: admin.token, body })
    const third = await create({ question: "Refunds?", answer: "Within 14 days.", position: 3 })
    expect(third.status).toBe(201)
    expect(third.body).toEqual({
      success: true,
      data: { id: expect.any(Number), question: "Refunds?", answer: "Within 14 days.", position: 3, is_public: true }
    })
    const first = await ok(staff.supportAdmin.createFaq({ payload: { question: "What is WireGuard?", answer: "A <b>fast</b> VPN protocol.", position: 1 } }))
    const hidden = await ok(staff.supportAdmin.createFaq({ payload: { question: "Internal", answer: "Staff only", position: 0, is_public: false } }))
    expect(hidden.is_public).toBe(false)
    const tieA = await ok(staff.supportAdmin.createFaq({ payload: { question: "Devices?", answer: "Five.", position: 2 } }))
    const tieB = await ok(staff.supportAdmin.createFaq({ payload: { question: "Countries?", answer: "Twenty.", position: 2 } }))

    const res = await app.get("/v1/faq")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: [
        { id: first.id, question: "What is WireGuard?", answer: "A <b>fast</b> VPN protocol." },
        { id: tieA.id, question: "Devices?", answer: "Five." },
        { id: tieB.id, question: "Countries?", answer: "Twenty." },
        { id: third.body.data.id, question: "Refunds?", answer: "Within 14 days." }
      ]
    })
    // a token does not change the answer
    const { me } = await signedIn()
    expect(await ok(me.support.listFaq())).toEqual(res.body.data)
  })

  test("POST /v1/admin/faq validates: question and answer required, position an integer, is_public a boolean", async () => {
    const res = await app.post("/v1/admin/faq", { token: admin.token, body: { position: "first", is_public: "yes" } })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: {
        question: ["The question field is required."],
        answer: ["The answer field is required."],
        position: ["The position field must be an integer."],
        is_public: ["The is public field must be true or false."]
      }
    })
    // the declared 201 answer
    const defaults = await ok(staff.supportAdmin.createFaq({ payload: { question: "Q", answer: "A" } }))
    expect(defaults).toMatchObject({ position: 0, is_public: true })
  })
})
