import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { Effect, Layer, Option, Redacted, TestClock, TestContext } from "effect"
import Stripe from "stripe"
import { runJobsOnce, ScheduledJobs } from "../../src/jobs/Jobs.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { startStripeStandIn, stripeEvent, type StripeStandIn } from "../support/stripe-stand-in.ts"
import { startTelegramStandIn, type TelegramStandIn } from "../support/telegram-stand-in.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makeServer } from "../vpn/fixtures.ts"

// [D124] Dunning with grace, through the HTTP API, on the test clock the harness offers (the jobs of
// [D80] run with `runJobsOnce` as the scheduler would; a last test runs the scheduler itself at
// JOBS_INTERVAL_SECONDS). Stripe and the Telegram Bot API are LOCAL STAND-INS (test/support/).
const SECRET_KEY = "sk_test_dunning"
const WEBHOOK_SECRET = "whsec_dunning"
const APP_URL = "https://app.example.com"
const DAY = 86_400_000
const stripe = new Stripe(SECRET_KEY)
const BOT_TOKEN = "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
const BOT_SECRET = "dunning-telegram-secret"

let standIn: StripeStandIn
let bot: TelegramStandIn
let app: TestApp
let planId: number
let server: { id: number; nodeToken: string }

beforeAll(async () => {
  standIn = startStripeStandIn({ secretKey: SECRET_KEY })
  bot = startTelegramStandIn({ token: BOT_TOKEN })
  app = await makeTestApp({
    config: {
      // [D125]: the notices of [D124] reach a linked chat too
      telegram: Option.some({ botToken: Redacted.make(BOT_TOKEN), webhookSecret: Redacted.make(BOT_SECRET), apiUrl: Option.some(bot.url) }),
      appUrl: APP_URL,
      stripe: Option.some({ secretKey: Redacted.make(SECRET_KEY), webhookSecret: Redacted.make(WEBHOOK_SECRET), apiUrl: Option.some(standIn.url) }),
      dunningRetryDays: [1, 3, 5],
      graceSpeedMbps: 1,
      // the tests move the clock past a month: the callers' tokens outlive it
      tokenTtlDays: 365
    }
  })
  const [plan] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days) values ('Pro', '', 0, 50, 0) returning id`
  planId = plan!.id
  await app.sql`insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${planId}, 'Monthly', 30, '10.00', 'USD')`
  server = await makeServer(app, { planIds: [planId] })
})
afterAll(async () => {
  await app.dispose()
  standIn.stop()
  bot.stop()
})

const jobs = () => app.run(runJobsOnce)
const at = (date: Date) => app.clock.set(date)

const deliverStripe = async (event: unknown) => {
  const raw = JSON.stringify(event)
  const signature = await stripe.webhooks.generateTestHeaderStringAsync({
    payload: raw,
    secret: WEBHOOK_SECRET,
    timestamp: Math.floor(app.clock.get().getTime() / 1000)
  })
  return app.post("/v1/webhooks/payments/stripe", { raw, headers: { "stripe-signature": signature } })
}
const payManual = (uuid: string, tx: string) => {
  const raw = JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: tx })
  const t = Math.floor(app.clock.get().getTime() / 1000)
  return app.post("/v1/webhooks/payments/manual", {
    raw,
    headers: { "x-signature": `t=${t},v1=${createHmac("sha256", "whsec_test").update(`${t}.${raw}`).digest("hex")}` }
  })
}

/** a user with a paid month: by Stripe keeping the card, or by the manual gateway; their device's key */
const subscriber = async (way: "card" | "manual") => {
  const user = await app.createUser()
  const me = await typedClient(app, { token: user.token })
  const { uuid } = await ok(
    me.billing.placeOrder({
      payload: way === "card" ? { plan_id: planId, cycle_id: 1, gateway: "stripe", save_card: true } : { plan_id: planId, cycle_id: 1 }
    })
  )
  if (way === "card") {
    await ok(me.billing.paymentUrl({ path: { invoice: uuid } }))
    const session = [...standIn.sessions.values()].find((s) => s.client_reference_id === uuid)!
    expect((await deliverStripe(stripeEvent("checkout.session.completed", standIn.pay(session.id)))).status).toBe(200)
  } else {
    expect((await payManual(uuid, `tx-first-${user.id}`)).status).toBe(200)
  }
  const conf = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
  expect(conf.status).toBe(200)
  const key = KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf.text)![1]!)
  const service = await ok(me.services.currentService())
  return { user, me, key, service, expiresAt: new Date(service.expires_at) }
}

const node = async (since?: number) => {
  const agent = await typedClient(app, { token: server.nodeToken })
  const answer = await ok(agent.node.peers({ urlParams: since === undefined ? {} : { since: String(since) } }))
  return {
    // the WireGuard peers (a removed one carries no `enabled`)
    peers: answer.data.flatMap((entry) => ("public_key" in entry && "enabled" in entry ? [entry] : [])),
    revision: answer.meta.revision
  }
}
const peerOf = async (key: string, since?: number) => (await node(since)).peers.find((p) => p.public_key === key)
const noticesTo = (email: string) => app.outbox.filter((m) => m.to === email && m.subject.includes("renewal"))
const renewalOf = async (userId: number) =>
  (
    await app.sql<{ uuid: string; status: string; due_date: Date }>`
    select uuid::text as uuid, status, due_date from invoices where user_id = ${userId} and renewal_of_expiry is not null`
  )[0]
const offSessionCharges = () => standIn.requests.filter((r) => r.method === "POST" && r.path === "/v1/payment_intents")

describe("saved cards [D124]", () => {
  test("save_card: true makes Checkout save the card on the user's customer; it is listed, and forgotten (detached at Stripe)", async () => {
    const { me, user } = await subscriber("card")
    const created = standIn.requests.filter((r) => r.path === "/v1/checkout/sessions").at(-1)!
    expect((created.body["payment_intent_data"] as Record<string, unknown>)["setup_future_usage"]).toBe("off_session")
    expect(created.body["customer"]).toMatch(/^cus_test_/)
    const listed = await ok(me.paymentMethods.listPaymentMethods())
    expect(listed).toEqual([{ id: expect.any(Number), brand: "visa", last4: "4242", exp_month: 12, exp_year: 2030 }])
    // another user sees none and cannot forget it
    const other = await app.createUser()
    const them = await typedClient(app, { token: other.token })
    expect(await ok(them.paymentMethods.listPaymentMethods())).toEqual([])
    const id = listed[0]!.id
    expect((await app.del(`/v1/account/payment-methods/${id}`, { token: other.token })).status).toBe(404)
    // the declared 200 `{success: true, message, data: {}}`, decoded to its message
    expect(await ok(me.paymentMethods.deletePaymentMethod({ path: { method: id } }))).toBe("Payment method deleted.")
    expect([...standIn.methods.values()].every((m) => m.customer === null)).toBe(true)
    expect(await ok(me.paymentMethods.listPaymentMethods())).toEqual([])
    expect((await app.del(`/v1/account/payment-methods/${id}`, { token: user.token })).status).toBe(404)
    // without save_card nothing is kept
    expect((await app.get("/v1/account/payment-methods")).status).toBe(401)
  })
})

describe("save_card on a plan change [D124]", () => {
  test("the change's invoice keeps the card too; without it, none is kept", async () => {
    const { me, service, user } = await subscriber("manual")
    const [bigger] = await app.sql<{ id: number }>`
      insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days) values ('Max', '', 0, 100, 0) returning id`
    const [cycle] = await app.sql<{ id: number }>`
      insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${bigger!.id}, 'Monthly', 30, '20.00', 'USD') returning id`
    // a success of either declared kind (201 the invoice, 200 the service)
    await ok(
      me.subscriptions.changePlan({ path: { service: service.id }, payload: { plan_id: bigger!.id, cycle_id: cycle!.id, gateway: "stripe", save_card: true } })
    )
    const rows = await app.sql<{ save_card: boolean }>`select save_card from invoices where user_id = ${user.id} order by id`
    expect(rows.map((r) => r.save_card)).toEqual([false, true])
    expect(
      (await app.post(`/v1/services/${service.id}/change`, { token: user.token, body: { plan_id: bigger!.id, cycle_id: cycle!.id, save_card: "yes" } })).status
    ).toBe(422)
  })
})

describe("a renewal charged to the saved card [D124]", () => {
  test("declined at expires_at: grace at GRACE_SPEED_MBPS with a notice; retried exactly at +1 day; paid at +3 days: active at full speed from the old expires_at", async () => {
    const { key, me, service, user, expiresAt } = await subscriber("card")
    expect((await peerOf(key))!.speed_limit_mbps).toBe(50)

    // the renewal invoice of [D80], 3 days ahead; the balance is empty: nothing is charged yet
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    const renewal = (await renewalOf(user.id))!
    expect(renewal.status).toBe("pending")
    expect(offSessionCharges()).toHaveLength(0)

    // at expires_at the card is charged off-session; the bank declines
    standIn.controls.declineOffSession = true
    const before = (await node()).revision
    at(new Date(expiresAt.getTime() + 1000))
    await jobs()
    expect(offSessionCharges()).toHaveLength(1)
    expect(offSessionCharges()[0]!.body).toMatchObject({ amount: "1000", currency: "usd", off_session: "true", confirm: "true" })
    const current = await ok(me.services.currentService())
    expect(current).toMatchObject({
      id: service.id,
      status: "grace",
      expires_at: expiresAt.toISOString(),
      grace_until: new Date(expiresAt.getTime() + 5 * DAY).toISOString()
    })
    // the speed the portal tells ("speed reduced to 1 Mbit/s"), on the current service and the service itself
    expect(current.grace_speed_mbps).toBe(1)
    expect((await ok(me.services.getService({ path: { service: service.id } }))).grace_speed_mbps).toBe(1)
    // every node throttles the device: the full list and the changes after the revision before
    expect(await peerOf(key)).toMatchObject({ enabled: true, speed_limit_mbps: 1 })
    expect(await peerOf(key, before)).toMatchObject({ enabled: true, speed_limit_mbps: 1 })
    // downloads still answer
    expect((await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })).status).toBe(200)
    // one notice, with the invoice's link in the portal
    const first = noticesTo(user.email)
    expect(first).toHaveLength(1)
    expect(first[0]!.text).toContain(`${APP_URL}/invoices/${renewal.uuid}`)
    // [D120] the reason as the notice words it, never the processor's own text (kept for the operator)
    expect(first[0]!.text).toContain("(the card visa ending 4242 was declined)")
    expect(first[0]!.text).not.toContain("insufficient funds")
    const [dunning] = await app.sql<{ last_error: string }>`select last_error from renewal_dunning where service_id = ${service.id}`
    expect(dunning!.last_error).toMatch(/^card_declined: .*insufficient funds/)
    // (Mustache escapes the link's slashes in HTML; a browser reads them back)
    expect((first[0]!.html ?? "").replaceAll("&#x2F;", "/")).toContain(`href="${APP_URL}/invoices/${renewal.uuid}"`)
    // the invoice stays payable through the grace
    expect((await renewalOf(user.id))!).toMatchObject({ status: "pending", due_date: new Date(expiresAt.getTime() + 5 * DAY) })

    // nothing before the first retry, exactly at +1 day the second charge and notice
    at(new Date(expiresAt.getTime() + DAY - 1000))
    await jobs()
    expect(offSessionCharges()).toHaveLength(1)
    expect(noticesTo(user.email)).toHaveLength(1)
    at(new Date(expiresAt.getTime() + DAY))
    await jobs()
    expect(offSessionCharges()).toHaveLength(2)
    expect(noticesTo(user.email)).toHaveLength(2)
    expect((await ok(me.services.currentService())).status).toBe("grace")

    // the card works again by the retry at +3 days: paid, active, the new period from the old expires_at
    standIn.controls.declineOffSession = false
    const beforePaid = (await node()).revision
    at(new Date(expiresAt.getTime() + 3 * DAY))
    await jobs()
    expect(offSessionCharges()).toHaveLength(3)
    expect((await renewalOf(user.id))!.status).toBe("paid")
    const after = await ok(me.services.currentService())
    expect(after).toMatchObject({ id: service.id, status: "active", grace_until: null, expires_at: new Date(expiresAt.getTime() + 30 * DAY).toISOString() })
    expect("grace_speed_mbps" in after).toBe(false)
    expect(await peerOf(key, beforePaid)).toMatchObject({ enabled: true, speed_limit_mbps: 50 })
    expect(noticesTo(user.email)).toHaveLength(2)
    // later runs do nothing more
    at(new Date(expiresAt.getTime() + 6 * DAY))
    await jobs()
    expect(offSessionCharges()).toHaveLength(3)
  })
})

describe("a renewal without a saved card or balance [D124]", () => {
  test("grace too: a notice at expires_at and at each retry (1, 3, 5 days), then the invoice cancelled and the service expired", async () => {
    const { key, user, expiresAt } = await subscriber("manual")
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    const renewal = (await renewalOf(user.id))!
    const charges = offSessionCharges().length
    const schedule: Array<[number, number, string]> = [
      [0, 1, "grace"],
      [DAY, 2, "grace"],
      [3 * DAY, 3, "grace"],
      [5 * DAY - 1000, 3, "grace"],
      [5 * DAY, 4, "expired"]
    ]
    for (const [offset, notices, status] of schedule) {
      at(new Date(expiresAt.getTime() + offset))
      await jobs()
      expect(noticesTo(user.email)).toHaveLength(notices)
      expect((await app.sql<{ status: string }>`select status from services where user_id = ${user.id}`)[0]!.status).toBe(status)
    }
    expect(offSessionCharges().length).toBe(charges)
    expect((await renewalOf(user.id))!.status).toBe("cancelled")
    expect((await app.get("/v1/services/current", { token: user.token })).status).toBe(404)
    expect(await peerOf(key)).toMatchObject({ enabled: false })
    expect(noticesTo(user.email).at(-1)!.subject).toContain("expired")
    expect(app.outbox.some((m) => m.to === user.email && m.subject === "Your VPN service has expired")).toBe(true)
    // the invoice can no longer be paid
    expect(renewal.uuid).toBeDefined()
  })

  test("each renewal-failed notice also reaches the user's linked Telegram chat, with the invoice's link [D125]", async () => {
    const { me, user, expiresAt } = await subscriber("manual")
    // linked as a person does it: the link (the declared 201), then /start <code> in a private chat with the bot
    const link = await ok(me.telegram.createTelegramLink())
    const code = new URL(link.url).searchParams.get("start")!
    const chat = 7_000_000_000 + user.id
    const start = {
      update_id: chat,
      message: {
        message_id: 1,
        date: Math.floor(app.clock.get().getTime() / 1000),
        text: `/start ${code}`,
        chat: { id: chat, type: "private", first_name: "Ada" },
        from: { id: chat, is_bot: false, first_name: "Ada", language_code: "en" }
      }
    }
    expect((await app.post("/v1/webhooks/telegram", { body: start, headers: { "x-telegram-bot-api-secret-token": BOT_SECRET } })).status).toBe(200)
    expect((await ok(me.telegram.telegramStatus())).linked).toBe(true)
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    const renewal = (await renewalOf(user.id))!
    at(expiresAt)
    await jobs()
    const rows = () => app.sql<{ status: string }>`
      select status from outbox where channel = 'telegram' and kind = 'renewal-failed' and recipient = ${String(chat)}`
    expect(await rows()).toHaveLength(1)
    // delivered by the pass the commit woke, or by a later jobs run; both clocks move on as in
    // production (a row deferred for the pace or leased by a pass is due again by the application's
    // clock, which only the test moves), and a miss says where the row stood
    const deadline = Date.now() + 15_000
    const failed = () => bot.to(String(chat)).find((m) => m.text.includes("could not collect the renewal"))
    while (failed() === undefined && Date.now() < deadline) {
      await Bun.sleep(100)
      app.clock.advance(1_000)
      await jobs()
    }
    if (failed() === undefined) {
      const outbox = await app.sql`
        select kind, status, attempts, last_error, next_attempt_at, in_flight_at from outbox where channel = 'telegram'`
      throw new Error(`not delivered: ${JSON.stringify({ outbox, calls: bot.calls, clock: app.clock.get() })}`)
    }
    expect(failed()?.text).toContain("reduced speed")
    expect(failed()?.text).toContain(`${APP_URL}/invoices/${renewal.uuid}`)
    expect(bot.to(String(chat)).filter((m) => m.text.includes("could not collect the renewal"))).toHaveLength(1)
    // and the mail, once
    expect(noticesTo(user.email)).toHaveLength(1)
  })

  test("in grace an OpenVPN node still lists the user's credentials, enabled at GRACE_SPEED_MBPS, and lets them in", async () => {
    const { me, user, expiresAt } = await subscriber("manual")
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [planId] })
    const creds = await ok(me.vpn.vpnCredentials())
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    at(expiresAt)
    await jobs()
    expect((await app.sql<{ status: string }>`select status from services where user_id = ${user.id}`)[0]!.status).toBe("grace")
    const list = await app.get("/v1/node/peers", { token: ovpn.nodeToken })
    expect(list.status).toBe(200)
    expect(
      (list.body.data as Array<{ username: string; enabled?: boolean; speed_limit_mbps?: number | null }>).find((e) => e.username === creds.username)
    ).toEqual({ username: creds.username, enabled: true, speed_limit_mbps: 1 })
    const agent = await typedClient(app, { token: ovpn.nodeToken })
    // the declared 200 (a refusal is 403)
    expect(await ok(agent.node.openvpnAuth({ payload: { username: creds.username, password: creds.password } }))).toMatchObject({
      username: creds.username,
      allowed: true
    })
  })

  test("paid in grace through another gateway: active at once, full speed in ?since=, the period from the old expires_at", async () => {
    const { key, me, user, expiresAt } = await subscriber("manual")
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    at(new Date(expiresAt.getTime() + 2 * 3600_000))
    await jobs()
    expect((await peerOf(key))!.speed_limit_mbps).toBe(1)
    const renewal = (await renewalOf(user.id))!
    const before = (await node()).revision
    expect((await payManual(renewal.uuid, `tx-grace-${user.id}`)).status).toBe(200)
    expect(await peerOf(key, before)).toMatchObject({ enabled: true, speed_limit_mbps: 50 })
    expect(await ok(me.services.currentService())).toMatchObject({
      status: "active",
      grace_until: null,
      expires_at: new Date(expiresAt.getTime() + 30 * DAY).toISOString()
    })
    // the next retry finds it paid: no notice, no expiry
    const notices = noticesTo(user.email).length
    at(new Date(expiresAt.getTime() + 5 * DAY))
    await jobs()
    expect(noticesTo(user.email)).toHaveLength(notices)
    expect((await ok(me.services.currentService())).status).toBe("active")
  })

  test("a balance credited during grace pays the renewal at the next retry", async () => {
    const { me, user, expiresAt } = await subscriber("manual")
    at(new Date(expiresAt.getTime() - 2 * DAY))
    await jobs()
    at(new Date(expiresAt.getTime() + 1000))
    await jobs()
    await app.sql`insert into balances (user_id, currency, amount) values (${user.id}, 'USD', 10.00)`
    await app.sql`insert into balance_transactions (user_id, currency, amount, reason) values (${user.id}, 'USD', 10.00, 'test credit')`
    at(new Date(expiresAt.getTime() + DAY))
    await jobs()
    expect((await renewalOf(user.id))!.status).toBe("paid")
    expect(await ok(me.services.currentService())).toMatchObject({
      status: "active",
      expires_at: new Date(expiresAt.getTime() + 30 * DAY).toISOString()
    })
  })

  test("a service that does not renew (auto_renew off) expires at expires_at as before: no grace", async () => {
    const { me, service, user, expiresAt } = await subscriber("manual")
    expect((await ok(me.services.setAutoRenew({ path: { service: service.id }, payload: { auto_renew: false } }))).data.auto_renew).toBe(false)
    at(new Date(expiresAt.getTime() + 1000))
    await jobs()
    expect((await app.sql<{ status: string }>`select status from services where id = ${service.id}`)[0]!.status).toBe("expired")
    expect(noticesTo(user.email)).toHaveLength(0)
  })
})

describe("DUNNING_RETRY_DAYS in seconds and the scheduler at JOBS_INTERVAL_SECONDS [D124]", () => {
  test("retries at 0.0001, 0.0002 days (8.64 s, 17.28 s) after expires_at, the scheduler running every 2 s", async () => {
    const fast = await makeTestApp({ reset: false, config: { dunningRetryDays: [0.0001, 0.0002], jobsIntervalSeconds: 2 } })
    try {
      const user = await fast.createUser()
      const start = fast.clock.get()
      const [svc] = await fast.sql<{ id: number }>`
        insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew)
        values (${user.id}, ${planId}, 1, 'active', ${start}, ${new Date(start.getTime() + 60_000)}, true) returning id`
      await fast.run(runJobsOnce)
      const statusOf = () => Effect.promise(async () => (await fast.sql<{ status: string }>`select status from services where id = ${svc!.id}`)[0]!.status)
      const settle = Effect.promise(() => Bun.sleep(400))
      const seen = await fast.run(
        Effect.scoped(
          Effect.gen(function* () {
            yield* Layer.build(ScheduledJobs)
            const log: Array<string> = []
            // the app clock moves with the effect clock: 2 s a tick
            for (let tick = 0; tick < 45; tick++) {
              fast.clock.set(new Date(start.getTime() + tick * 2000))
              yield* TestClock.adjust("2 seconds")
              yield* settle
              log.push(`${tick * 2}:${yield* statusOf()}:${noticesOf(fast, user.email)}`)
            }
            return log
          })
        ).pipe(Effect.provide(TestContext.TestContext))
      )
      const first = (pattern: RegExp) => seen.find((s) => pattern.test(s))
      // in grace from the run after expires_at (60 s); retries at 68.64 s and 77.28 s; expired then
      expect(first(/:grace:1$/)!.split(":")[0]).toBe("60")
      expect(first(/:grace:2$/)!.split(":")[0]).toBe("70")
      expect(first(/:expired:3$/)!.split(":")[0]).toBe("78")
    } finally {
      await fast.dispose()
    }
  }, 60_000)
})

const noticesOf = (a: TestApp, email: string) => a.outbox.filter((m) => m.to === email && m.subject.includes("renewal")).length

// last: its card stays in dunning, and later clock moves would retry it
describe("one moment per jobs run [D124]", () => {
  test("a service whose expiry comes while the run charges another's card goes into grace, not expired", async () => {
    const a = await subscriber("card")
    app.clock.advance(60_000)
    const b = await subscriber("manual")
    expect(b.expiresAt.getTime()).toBeGreaterThan(a.expiresAt.getTime())
    // both renewal invoices, 2 days ahead
    at(new Date(a.expiresAt.getTime() - 2 * DAY))
    await jobs()
    expect((await renewalOf(b.user.id))!.status).toBe("pending")
    // the run starts at A's expiry (B's is still ahead); A's card is charged, and while the charge
    // is on its way the clock passes B's expiry
    standIn.controls.declineOffSession = true
    standIn.controls.onOffSession = () => app.clock.advance(b.expiresAt.getTime() - a.expiresAt.getTime() + 2000)
    try {
      at(a.expiresAt)
      await jobs()
    } finally {
      standIn.controls.onOffSession = undefined
      standIn.controls.declineOffSession = false
    }
    // B was not expired by that run: the next one sees its renewal due and puts it in grace
    const statusOfB = async () => (await ok(b.me.services.getService({ path: { service: b.service.id } }))).status
    expect(await statusOfB()).toBe("active")
    await jobs()
    expect(await statusOfB()).toBe("grace")
    expect((await renewalOf(b.user.id))!.status).toBe("pending")
  })
})
