import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import type { Mail } from "../../src/platform/Mailer.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient, withToken } from "../support/typed.ts"
import { DAY, days, servicesFixtures } from "../billing/services-fixtures.ts"
import { GIB, makeServer } from "../vpn/fixtures.ts"

// [D96]: each notification fires once, at its moment, governed by email_notifications; security
// mail always goes; every mail passes through the durable outbox.
// several job runs a test on a shared, loaded machine
setDefaultTimeout(30_000)

let app: TestApp
let fx: ReturnType<typeof servicesFixtures>
let planId: number
let cycleId: number
const start = new Date("2026-03-10T12:00:00.000Z")

beforeAll(async () => {
  app = await makeTestApp()
  fx = servicesFixtures(app)
  planId = await fx.plan({ name: "Pro <Plus>", bandwidth: 10 })
  cycleId = await fx.cycle(planId, { name: "Monthly", days: 30, price: "12.30", currency: "EUR" })
})
afterAll(() => app.dispose())

const runJobs = () => app.run(runJobsOnce)
const mailsTo = (email: string) => app.outbox.filter((m) => m.to === email)
const waitFor = async (email: string, n: number, timeoutMs = 2000): Promise<Array<Mail>> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = mailsTo(email)
    if (found.length >= n || Date.now() > deadline) return found
    await Bun.sleep(10)
  }
}
const setNotifications = async (token: string, on: boolean) => {
  const me = await typedClient(app, { token })
  const settings = await ok(me.accounts.updateSettings({ payload: { email_notifications: on } }))
  expect(settings.data.email_notifications).toBe(on)
}

describe("expiry notices [D96]", () => {
  test("3 days and 1 day before expiry (no auto-renew), then expired: each once, at its moment", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const expiresAt = days(start, 5)
    const serviceId = await fx.service({ userId: user.id, planId, cycleId, expiresAt, autoRenew: false })

    await runJobs()
    expect(mailsTo(user.email)).toHaveLength(0)

    app.clock.set(new Date(expiresAt.getTime() - 3 * DAY + 60_000)) // inside 3 days
    await runJobs()
    await runJobs()
    let mails = mailsTo(user.email)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.subject).toBe("Your VPN service expires in 3 days")
    expect(mails[0]!.text).toContain(`service #${serviceId}`)
    expect(mails[0]!.text).toContain(expiresAt.toISOString())
    expect(mails[0]!.text).toContain("Pro <Plus>")
    expect(mails[0]!.text).toContain(app.config.appUrl)
    // the HTML part escapes what the engine is given
    expect(mails[0]!.html).toContain("Pro &lt;Plus&gt;")
    expect(mails[0]!.html!.replaceAll("&#x2F;", "/")).toContain(`href="${app.config.appUrl}"`)

    app.clock.set(new Date(expiresAt.getTime() - DAY + 60_000)) // inside 1 day
    await runJobs()
    await runJobs()
    mails = mailsTo(user.email)
    expect(mails.map((m) => m.subject)).toEqual(["Your VPN service expires in 3 days", "Your VPN service expires tomorrow"])

    app.clock.set(new Date(expiresAt.getTime() + 60_000))
    await runJobs()
    await runJobs()
    mails = mailsTo(user.email)
    expect(mails).toHaveLength(3)
    expect(mails[2]!.subject).toBe("Your VPN service has expired")
    expect(mails[2]!.text).toContain(`#${serviceId}`)
  })

  test("an auto-renewing service gets its renewal invoice's notice instead, once", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const expiresAt = days(start, 2)
    const serviceId = await fx.service({ userId: user.id, planId, cycleId, expiresAt, autoRenew: true })
    await runJobs()
    await runJobs()
    const mails = mailsTo(user.email)
    expect(mails).toHaveLength(1)
    const [invoice] = await app.sql<{ uuid: string }>`select uuid::text as uuid from invoices where service_id = ${serviceId}`
    expect(mails[0]!.subject).toBe(`Renewal invoice ${invoice!.uuid}: 12.30 EUR`)
    expect(mails[0]!.text).toContain("12.30 EUR")
    expect(mails[0]!.text).toContain(`#${serviceId}`)
  })

  test("with email_notifications off: no notices, but security mail (verification) still goes", async () => {
    app.clock.set(start)
    const guest = await typedClient(app)
    // the declared 201 answer, with its token
    const reg = withToken(
      await ok(
        guest.accounts.register({
          payload: { name: "Quiet", email: "quiet@example.com", password: "Str0ng-Passw0rd!", password_confirmation: "Str0ng-Passw0rd!" }
        })
      )
    )
    const token = reg.token
    await setNotifications(token, false)
    const [row] = await app.sql<{ id: number }>`select id from users where email = 'quiet@example.com'`
    const expiresAt = days(start, 2)
    await fx.service({ userId: row!.id, planId, cycleId, expiresAt, autoRenew: false })
    await fx.service({ userId: row!.id, planId, cycleId, expiresAt: days(start, 1), autoRenew: true })
    await runJobs()
    app.clock.set(new Date(expiresAt.getTime() + 60_000))
    await runJobs()
    expect((await waitFor("quiet@example.com", 1)).map((m) => m.subject)).toEqual(["Verify your e-mail address"])
    const me = await typedClient(app, { token })
    expect(typeof (await ok(me.accounts.resendVerification()))).toBe("string")
    expect((await waitFor("quiet@example.com", 2)).map((m) => m.subject)).toEqual(["Verify your e-mail address", "Verify your e-mail address"])
  })
})

describe("payment receipt [D96]", () => {
  test("a paid invoice's receipt names its uuid, amount, currency and the period it pays; once", async () => {
    app.clock.set(start)
    const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
    const user = await app.createUser()
    // the declared 201 answer
    const created = await ok(staff.billingAdmin.createInvoice({ path: { user: user.id }, payload: { plan_id: planId, cycle_id: cycleId } }))
    const uuid = created.uuid
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
    // paid again: nothing changes, no second receipt
    expect((await ok(staff.billingAdmin.markPaid({ path: { invoice: uuid } }))).status).toBe("paid")
    const mails = await waitFor(user.email, 1)
    await Bun.sleep(50)
    expect(mailsTo(user.email)).toHaveLength(1)
    expect(mails[0]!.subject).toBe(`Receipt for invoice ${uuid}`)
    expect(mails[0]!.text).toContain("12.30 EUR")
    expect(mails[0]!.text).toContain(`${start.toISOString()} to ${days(start, 30).toISOString()}`)
  })
})

describe("quota notices [D96]", () => {
  test("a node report moving the month across 80 % and then 100 % tells the user once each", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    await fx.service({ userId: user.id, planId, cycleId, expiresAt: days(start, 20) })
    const server = await makeServer(app, { planIds: [planId] })
    const me = await typedClient(app, { token: user.token })
    // the config is only the step that makes the peer (its declared 200 answer)
    expect(await ok(me.vpn.wireguard({ path: { server: server.id } }))).toContain("[Interface]")
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where server_id = ${server.id}`
    const node = await typedClient(app, { token: server.nodeToken })
    // the declared 200 answer, the entry counted
    const report = async (bytes: number) =>
      (await ok(node.node.usage({ headers: {}, payload: [{ public_key: peer!.public_key, rx_bytes: bytes, tx_bytes: 0 }] }))).accepted
    expect(await report(7 * GIB)).toBe(1)
    await runJobs()
    expect(mailsTo(user.email)).toHaveLength(0)
    expect(await report(1.5 * GIB)).toBe(1) // 8.5 of 10 GB
    expect(await report(GIB / 8)).toBe(1)
    await runJobs()
    expect(mailsTo(user.email).map((m) => m.subject)).toEqual(["You have used 80 % of your data for this period"])
    expect(mailsTo(user.email)[0]!.text).toContain("8.50 GB of its 10 GB")
    expect(await report(2 * GIB)).toBe(1)
    expect(await report(GIB)).toBe(1)
    await runJobs()
    await runJobs()
    expect(mailsTo(user.email).map((m) => m.subject)).toEqual([
      "You have used 80 % of your data for this period",
      "You have used all your data for this period"
    ])
  })
})

describe("the durable outbox [D96]", () => {
  test("while SMTP fails the mail waits with its attempts and error; after 24 h of failures it is failed and listed", async () => {
    app.clock.set(start)
    const admin = await app.createUser({ role: "admin" })
    const staff = await typedClient(app, { token: admin.token })
    const guest = await typedClient(app)
    app.mailer.down = true
    try {
      // the declared 200 answer
      expect(typeof (await ok(guest.accounts.forgotPassword({ payload: { email: admin.email } })))).toBe("string")
      await Bun.sleep(100)
      expect(mailsTo(admin.email)).toHaveLength(0)
      const pending = await app.get("/v1/admin/outbox?status=pending", { token: admin.token })
      expect(pending.status).toBe(200)
      const row = pending.body.data.find((m: { recipient: string }) => m.recipient === admin.email)
      expect(row).toMatchObject({ kind: "reset_password", subject: "Reset your password", status: "pending", attempts: 1 })
      expect(row.last_error).toContain("ECONNREFUSED")
      // never the body: the reset token is not in the list, nor in the table in plain text
      expect(pending.text).not.toContain("token=")
      const [stored] = await app.sql<{ payload: string }>`select payload from outbox where id = ${row.id}`
      expect(stored!.payload).not.toContain("reset-password")

      // retried with backoff: after 10 s it is due again and fails again
      app.clock.advance(11_000)
      await runJobs()
      const again = await ok(staff.outboxAdmin.listOutbox({ urlParams: { status: "pending" } }))
      expect(again.data.find((m) => m.id === row.id)?.attempts).toBe(2)

      app.clock.advance(25 * 3_600_000)
      await runJobs()
      const failed = await ok(staff.outboxAdmin.listOutbox({ urlParams: { status: "failed" } }))
      expect(failed.data.map((m) => m.id)).toContain(row.id)
      expect(failed.meta).toMatchObject({ current_page: 1, per_page: 15 })
      expect(failed.links.first).toContain("/v1/admin/outbox?status=failed&page=1")
    } finally {
      app.mailer.down = false
    }
    // given up means given up: SMTP back, nothing is sent
    await runJobs()
    expect(mailsTo(admin.email)).toHaveLength(0)
  })

  test("a mail that failed once goes out when SMTP is back, exactly once", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const guest = await typedClient(app)
    app.mailer.down = true
    await ok(guest.accounts.forgotPassword({ payload: { email: user.email } }))
    await Bun.sleep(100)
    app.mailer.down = false
    await runJobs() // not yet due
    expect(mailsTo(user.email)).toHaveLength(0)
    app.clock.advance(60_000)
    await runJobs()
    await runJobs()
    expect(mailsTo(user.email)).toHaveLength(1)
    expect(mailsTo(user.email)[0]!.subject).toBe("Reset your password")
  })

  test("GET /v1/admin/outbox: 401 without a token, 403 for a user, 422 for an unknown status", async () => {
    const user = await app.createUser()
    const admin = await app.createUser({ role: "admin" })
    expect((await app.get("/v1/admin/outbox")).status).toBe(401)
    expect((await app.get("/v1/admin/outbox", { token: user.token })).status).toBe(403)
    const bad = await app.get("/v1/admin/outbox?status=lost", { token: admin.token })
    expect(bad.status).toBe(422)
    expect(bad.body.errors.status).toEqual(["The selected status is invalid."])
    // the declared 200 answer (its `success: true` envelope decoded)
    const staff = await typedClient(app, { token: admin.token })
    const all = await ok(staff.outboxAdmin.listOutbox({ urlParams: {} }))
    expect(all.meta.current_page).toBe(1)
  })

  test("delivered rows are purged by the jobs after the retention", async () => {
    app.clock.set(start)
    const user = await app.createUser()
    const guest = await typedClient(app)
    await ok(guest.accounts.forgotPassword({ payload: { email: user.email } }))
    await waitFor(user.email, 1)
    await Bun.sleep(50)
    const count = async () => (await app.sql<{ n: number }>`select count(*)::int as n from outbox where recipient = ${user.email} and status = 'sent'`)[0]!.n
    expect(await count()).toBe(1)
    app.clock.advance(8 * DAY)
    await runJobs()
    expect(await count()).toBe(0)
  })
})
