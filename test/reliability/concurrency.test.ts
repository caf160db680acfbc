import { waitForMail } from "../accounts/helpers.ts"
import { HttpApi } from "@effect/platform"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Api } from "../../src/Api.ts"
import { hmacSha256Hex, sha256Hex } from "../../src/platform/Crypto.ts"
import { makeTestApp, type TestApp, type TestResponse } from "../support/app.ts"

/**
 * Issue 9, suite 3: concurrency through the HTTP API (Promise.all in process). Runs on the
 * embedded database and, with TEST_DATABASE_URL, on a real PostgreSQL with a pool of
 * connections where the races are real.
 */

const DAY = 86_400_000
const SERVER_KEY = "x1QmZ3bBR6dHqQ4k3rHcA1FqJ1cB0wzZ2yQy8V8h0mE="
const WEBHOOK_SECRET = "whsec_test"

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const figure = (line: string) => console.log(`concurrency: ${line}`)

const tally = (responses: ReadonlyArray<TestResponse>) => {
  const counts = new Map<number, number>()
  for (const r of responses) counts.set(r.status, (counts.get(r.status) ?? 0) + 1)
  return [...counts.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${n}×${s}`)
    .join(", ")
}

let counter = 0
const plan = async (options: { readonly limitGb?: number; readonly trialDays?: number; readonly days?: number } = {}) => {
  const [p] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb, trial_days)
    values (${`Race plan ${++counter}`}, 'concurrency', ${options.limitGb ?? 0}, ${options.trialDays ?? 0}) returning id`
  const [c] = await app.sql<{ id: number }>`
    insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (${p!.id}, 'Monthly', ${options.days ?? 30}, '9.99', 'USD') returning id`
  return { planId: p!.id, cycleId: c!.id }
}

const server = async (protocol: "wireguard" | "openvpn", planIds: ReadonlyArray<number>, subnet = "10.66.0.0/16") => {
  const nodeToken = `node_race_${++counter}_${"r".repeat(32)}`
  const [row] = await app.sql<{ id: number }>`
    insert into servers (name, country, city, protocol, ip, port, public_key, subnet, ca_cert, node_token_hash)
    values (${`Race ${counter}`}, 'NL', 'Amsterdam', ${protocol}, '198.51.100.30', ${protocol === "wireguard" ? 51820 : 1194},
            ${protocol === "wireguard" ? SERVER_KEY : null}, ${subnet}::cidr,
            ${protocol === "openvpn" ? "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----" : null}, ${sha256Hex(nodeToken)})
    returning id`
  for (const planId of planIds) await app.sql`insert into server_plans (server_id, plan_id) values (${row!.id}, ${planId})`
  return { id: row!.id, nodeToken }
}

const service = async (userId: number, p: { readonly planId: number; readonly cycleId: number }, expiresAt?: Date) => {
  const now = app.clock.get()
  const [row] = await app.sql<{ id: number }>`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at)
    values (${userId}, ${p.planId}, ${p.cycleId}, 'active', ${new Date(now.getTime() - DAY)}, ${expiresAt ?? new Date(now.getTime() + 10 * DAY)})
    returning id`
  return row!.id
}

const users = (n: number) => Promise.all(Array.from({ length: n }, () => app.createUser()))

describe("registration [D13][D20]", () => {
  test("50 concurrent registrations of one e-mail in mixed case: one 201, 49 × 422 errors.email, no 5xx", async () => {
    const base = "race.registrant@example.com"
    const variants = Array.from(
      { length: 50 },
      (_, i) => [...base].map((ch, j) => (((i >> (j % 6)) & 1) === 1 ? ch.toUpperCase() : ch)).join("") + (i % 3 === 0 ? " " : "")
    )
    const responses = await Promise.all(
      variants.map((email, i) =>
        app.post("/v1/auth/register", {
          body: { name: "Racer", email: email.trim(), password: "a long race passphrase 7", password_confirmation: "a long race passphrase 7" },
          headers: { "x-forwarded-for": `203.0.113.${i + 1}` }
        })
      )
    )
    figure(`register ×50 one e-mail in mixed case -> ${tally(responses)}`)
    expect(responses.filter((r) => r.status >= 500).map((r) => r.text)).toEqual([])
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1)
    const refused = responses.filter((r) => r.status !== 201)
    expect(refused.every((r) => r.status === 422)).toBe(true)
    for (const r of refused) {
      expect(r.body).toEqual({ success: false, message: "The given data was invalid.", errors: { email: ["The email has already been taken."] } })
    }
    const rows = await app.sql<{ n: number }>`select count(*)::int as n from users where lower(email) = ${base}`
    expect(rows[0]!.n).toBe(1)
  }, 120_000)
})

describe("WireGuard peers [D52]", () => {
  test("50 concurrent first downloads by 50 users get 50 distinct addresses", async () => {
    const p = await plan()
    const s = await server("wireguard", [p.planId], "10.77.0.0/24")
    const people = await users(50)
    for (const u of people) await service(u.id, p)
    const responses = await Promise.all(people.map((u) => app.get(`/v1/servers/${s.id}/wireguard`, { token: u.token })))
    figure(`first WireGuard download ×50 users -> ${tally(responses)}`)
    expect(responses.map((r) => r.status)).toEqual(people.map(() => 200))
    const addresses = responses.map((r) => /^Address\s*=\s*(\S+)/m.exec(r.text)?.[1])
    expect(addresses.every((a) => a !== undefined)).toBe(true)
    expect(new Set(addresses).size).toBe(50)
    const [peers] = await app.sql<{ n: number; addresses: number; keys: number }>`
      select count(*)::int as n, count(distinct address)::int as addresses, count(distinct public_key)::int as keys
      from wireguard_peers where server_id = ${s.id}`
    expect(peers).toEqual({ n: 50, addresses: 50, keys: 50 })
    // a second wave returns the same peers
    const again = await Promise.all(people.map((u) => app.get(`/v1/servers/${s.id}/wireguard`, { token: u.token })))
    expect(again.map((r) => /^Address\s*=\s*(\S+)/m.exec(r.text)?.[1])).toEqual(addresses)
    figure(`first WireGuard download ×50 users -> ${new Set(addresses).size} distinct addresses, ${peers!.n} peers`)
  }, 120_000)
})

describe("password reset [D23]", () => {
  test("the same reset token used twice at once: one success, one 422 errors.token (10 rounds)", async () => {
    const rounds = 10
    let wins = 0
    for (let round = 0; round < rounds; round++) {
      const user = await app.createUser()
      const ip = `198.18.${round}.1`
      const forgot = await app.post("/v1/auth/forgot-password", { body: { email: user.email }, headers: { "x-forwarded-for": ip } })
      expect(forgot.status).toBe(200)
      // the mail leaves through the outbox after the commit ([D96])
      const mail = await waitForMail(app, (m) => m.to.includes(user.email))
      const token = mail ? /reset-password\?token=([^&\s]+)/.exec(mail.text)?.[1] : undefined
      expect(token).toBeDefined()
      const passwords = [`first new passphrase ${round}`, `second new passphrase ${round}`]
      const responses = await Promise.all(
        passwords.map((password, i) =>
          app.post("/v1/auth/reset-password", {
            body: { token, email: user.email, password, password_confirmation: password },
            headers: { "x-forwarded-for": `${ip.slice(0, -1)}${i + 2}` }
          })
        )
      )
      expect(responses.map((r) => r.status).sort()).toEqual([200, 422])
      const loser = responses.find((r) => r.status === 422)!
      expect(loser.body.errors?.token?.length).toBeGreaterThan(0)
      const winner = passwords[responses.findIndex((r) => r.status === 200)]!
      const other = passwords.find((p) => p !== winner)!
      const login = (password: string) =>
        app.post("/v1/auth/login", { body: { email: user.email, password }, headers: { "x-forwarded-for": `${ip.slice(0, -1)}9` } })
      expect((await login(winner)).status).toBe(200)
      expect((await login(other)).status).toBe(401)
      wins++
    }
    figure(`reset token ×2 at once, ${rounds} rounds -> ${wins} rounds with exactly one 200 and one 422 errors.token`)
  }, 120_000)
})

describe("rate limits under concurrency [D30]", () => {
  test("20 logins at once from one address: exactly 5 reach the check, 15 are 429", async () => {
    const [user] = await users(1)
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.post("/v1/auth/login", { body: { email: user!.email, password: "wrong password here" }, headers: { "x-forwarded-for": "198.51.100.77" } })
      )
    )
    figure(`login ×20 at once, one address -> ${tally(responses)}`)
    expect(responses.filter((r) => r.status === 401)).toHaveLength(5)
    expect(responses.filter((r) => r.status === 429)).toHaveLength(15)
  }, 60_000)

  test("20 promo validations at once from one address: exactly 10 pass the limit", async () => {
    const p = await plan()
    await app.sql`insert into promo_codes (code, type, value) values ('RATERACE', 'percentage', 10)`
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.post("/v1/promos/validate", { body: { code: "RATERACE", plan_id: p.planId, cycle_id: p.cycleId }, headers: { "x-forwarded-for": "198.51.101.9" } })
      )
    )
    figure(`promo validate ×20 at once, one address -> ${tally(responses)}`)
    expect(responses.filter((r) => r.status === 200)).toHaveLength(10)
    expect(responses.filter((r) => r.status === 429)).toHaveLength(10)
  }, 60_000)
})

// ---- billing: orders, promo uses and the payment webhook [D33][D35][D40] ----

/** The billing cases run once the API documents their routes (billing lands after this suite). */
const documented = (() => {
  const set = new Set<string>()
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => void set.add(`${endpoint.method} ${endpoint.path}`)
  })
  return set
})()
const billingRoutes = ["POST /v1/orders", "POST /v1/webhooks/payments/:gateway"]
const billingMissing = billingRoutes.filter((r) => !documented.has(r))
if (billingMissing.length > 0) figure(`billing cases NOT RUN: the API does not document ${billingMissing.join(", ")} yet`)
const billingTest = test.skipIf(billingMissing.length > 0)

const sign = (raw: string, t = Math.floor(app.clock.get().getTime() / 1000)) => `t=${t},v1=${hmacSha256Hex(WEBHOOK_SECRET, `${t}.${raw}`)}`

const webhook = (raw: string) => app.post("/v1/webhooks/payments/manual", { raw, headers: { "x-signature": sign(raw) } })

const order = (token: string, body: Record<string, unknown>, i = 0) =>
  app.post("/v1/orders", { token, body, headers: { "x-forwarded-for": `192.0.2.${(i % 250) + 1}` } })

const expiresOf = async (serviceId: number) => {
  const [row] = await app.sql<{ expires_at: Date }>`select expires_at from services where id = ${serviceId}`
  return row!.expires_at.getTime()
}

describe("payment webhook [D35][D40]", () => {
  billingTest(
    "the same paid event 20 times at once extends the service by exactly one cycle",
    async () => {
      const p = await plan({ days: 30 })
      const [user] = await users(1)
      const serviceId = await service(user!.id, p)
      const before = await expiresOf(serviceId)
      const placed = await order(user!.token, { plan_id: p.planId, cycle_id: p.cycleId })
      expect(placed.status).toBe(201)
      const uuid = placed.body.data.uuid as string
      const raw = JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: "tx-race-same" })
      const responses = await Promise.all(Array.from({ length: 20 }, () => webhook(raw)))
      figure(`same webhook ×20 at once -> ${tally(responses)}`)
      expect(responses.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.text}`)).toEqual([])
      const after = await expiresOf(serviceId)
      expect(after - before).toBe(30 * DAY)
      const [events] = await app.sql<{ n: number }>`select count(*)::int as n from payment_events where transaction_id = 'tx-race-same'`
      expect(events!.n).toBe(1)
      const [invoice] = await app.sql<{ status: string; transaction_id: string }>`select status, transaction_id from invoices where uuid = ${uuid}::uuid`
      expect(invoice).toEqual({ status: "paid", transaction_id: "tx-race-same" })
      const [services] = await app.sql<{ n: number }>`select count(*)::int as n from services where user_id = ${user!.id}`
      expect(services!.n).toBe(1)
      figure(`same webhook ×20 at once -> expires_at moved by ${(after - before) / DAY} days (one cycle of 30), ${events!.n} payment event`)
    },
    120_000
  )

  billingTest(
    "20 different transactions for one invoice at once: one payment, one extension",
    async () => {
      const p = await plan({ days: 30 })
      const [user] = await users(1)
      const serviceId = await service(user!.id, p)
      const before = await expiresOf(serviceId)
      const placed = await order(user!.token, { plan_id: p.planId, cycle_id: p.cycleId })
      expect(placed.status).toBe(201)
      const uuid = placed.body.data.uuid as string
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => webhook(JSON.stringify({ invoice_uuid: uuid, status: "paid", transaction_id: `tx-race-many-${i}` })))
      )
      figure(`20 transactions for one invoice at once -> ${tally(responses)}`)
      expect(responses.filter((r) => r.status >= 500).map((r) => r.text)).toEqual([])
      expect(responses.filter((r) => r.status === 200).length).toBe(20)
      expect((await expiresOf(serviceId)) - before).toBe(30 * DAY)
      const [invoice] = await app.sql<{ status: string; transaction_id: string }>`select status, transaction_id from invoices where uuid = ${uuid}::uuid`
      expect(invoice!.status).toBe("paid")
      expect(invoice!.transaction_id).toMatch(/^tx-race-many-\d+$/)
    },
    120_000
  )

  billingTest(
    "a first order paid by 20 concurrent webhooks starts exactly one service",
    async () => {
      const p = await plan({ days: 30 })
      const [user] = await users(1)
      const placed = await order(user!.token, { plan_id: p.planId, cycle_id: p.cycleId })
      expect(placed.status).toBe(201)
      const raw = JSON.stringify({ invoice_uuid: placed.body.data.uuid, status: "paid", transaction_id: "tx-race-first" })
      const responses = await Promise.all(Array.from({ length: 20 }, () => webhook(raw)))
      figure(`first order, same webhook ×20 at once -> ${tally(responses)}`)
      expect(responses.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.text}`)).toEqual([])
      const rows = await app.sql<{ status: string; starts_at: Date; expires_at: Date }>`
      select status, starts_at, expires_at from services where user_id = ${user!.id} and status in ('active', 'suspended')`
      expect(rows).toHaveLength(1)
      expect(rows[0]!.expires_at.getTime() - rows[0]!.starts_at.getTime()).toBe(30 * DAY)
    },
    120_000
  )
})

describe("promo max_uses [D33]", () => {
  billingTest(
    "20 concurrent orders by 20 users with a max_uses=3 code: 3 get it, 17 get 422, uses stay 3",
    async () => {
      const p = await plan()
      await app.sql`insert into promo_codes (code, type, value, max_uses) values ('RACE3', 'percentage', 50, 3)`
      const people = await users(20)
      const responses = await Promise.all(people.map((u, i) => order(u.token, { plan_id: p.planId, cycle_id: p.cycleId, promo_code: "race3" }, i)))
      figure(`orders ×20 users on max_uses=3 -> ${tally(responses)}`)
      expect(responses.filter((r) => r.status >= 500).map((r) => r.text)).toEqual([])
      expect(responses.filter((r) => r.status === 201)).toHaveLength(3)
      for (const r of responses.filter((r) => r.status !== 201)) {
        expect(r.status).toBe(422)
        expect(r.body).toEqual({ success: false, message: "Invalid or expired promo code." })
      }
      const [promo] = await app.sql<{ uses: number }>`select uses from promo_codes where lower(code) = 'race3'`
      expect(promo!.uses).toBe(3)
      const [invoices] = await app.sql<{ n: number }>`
      select count(*)::int as n from invoices i join promo_codes c on c.id = i.promo_code_id where lower(c.code) = 'race3'`
      expect(invoices!.n).toBe(3)
    },
    120_000
  )

  billingTest(
    "10 concurrent orders by one user with a max_uses=2 code never pass the limit",
    async () => {
      const p = await plan()
      // no per-caller limit ([D33] rev. 2 defaults it to 1): the overall max_uses is what is raced here
      await app.sql`insert into promo_codes (code, type, value, max_uses, max_uses_per_user) values ('RACE2', 'fixed', 1, 2, null)`
      const [user] = await users(1)
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => order(user!.token, { plan_id: p.planId, cycle_id: p.cycleId, promo_code: "RACE2" }, i))
      )
      figure(`orders ×10 one user on max_uses=2 -> ${tally(responses)}`)
      expect(responses.filter((r) => r.status >= 500).map((r) => r.text)).toEqual([])
      expect(responses.filter((r) => r.status === 201).length).toBe(2)
      const [promo] = await app.sql<{ uses: number }>`select uses from promo_codes where code = 'RACE2'`
      expect(promo!.uses).toBe(2)
    },
    120_000
  )
})

describe("support tickets under concurrency [D30][D60]", () => {
  test("20 tickets at once by one user: exactly 10 created, 10 are 429", async () => {
    const [user] = await users(1)
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.post("/v1/tickets", {
          token: user!.token,
          body: { subject: `Race ${i}`, message: "Does not connect" },
          headers: { "x-forwarded-for": `198.51.102.${i + 1}` }
        })
      )
    )
    figure(`tickets ×20 at once, one user -> ${tally(responses)}`)
    expect(responses.filter((r) => r.status === 201)).toHaveLength(10)
    expect(responses.filter((r) => r.status === 429)).toHaveLength(10)
    const [rows] = await app.sql<{ tickets: number; replies: number }>`
      select count(distinct t.id)::int as tickets, count(r.id)::int as replies
      from tickets t left join ticket_replies r on r.ticket_id = t.id where t.user_id = ${user!.id}`
    expect(rows).toEqual({ tickets: 10, replies: 10 })
  }, 60_000)

  test("9 replies at once to a closed ticket: all stored, the ticket open again", async () => {
    const [user] = await users(1)
    const created = await app.post("/v1/tickets", { token: user!.token, body: { subject: "Race replies", message: "first" } })
    expect(created.status).toBe(201)
    const id = created.body.data.id as number
    expect((await app.put(`/v1/tickets/${id}/close`, { token: user!.token })).status).toBe(200)
    const responses = await Promise.all(
      Array.from({ length: 9 }, (_, i) => app.post(`/v1/tickets/${id}/reply`, { token: user!.token, body: { message: `reply ${i}` } }))
    )
    figure(`replies ×9 at once to a closed ticket -> ${tally(responses)}`)
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 201))
    const ticket = await app.get(`/v1/tickets/${id}`, { token: user!.token })
    expect(ticket.body.data.status).toBe("open")
    expect(ticket.body.data.replies).toHaveLength(10)
  }, 60_000)
})

describe("node usage reports [D54][D55]", () => {
  test("30 concurrent reports over WireGuard keys and OpenVPN usernames add up exactly", async () => {
    const p = await plan()
    const wg = await server("wireguard", [p.planId], "10.78.0.0/24")
    const ovpn = await server("openvpn", [p.planId])
    const people = await users(10)
    const serviceIds: Array<number> = []
    for (const u of people) serviceIds.push(await service(u.id, p))
    for (const u of people) expect((await app.get(`/v1/servers/${wg.id}/wireguard`, { token: u.token })).status).toBe(200)
    const keys = new Map<number, string>()
    for (const row of await app.sql<{ user_id: number; public_key: string }>`select user_id, public_key from wireguard_peers where server_id = ${wg.id}`) {
      keys.set(row.user_id, row.public_key)
    }
    const usernames = new Map<number, string>()
    for (const u of people) {
      const res = await app.get("/v1/account/vpn-credentials", { token: u.token })
      expect(res.status).toBe(200)
      usernames.set(u.id, res.body.data.username as string)
    }
    const reports = 30
    const expected = new Map<number, number>(people.map((u) => [u.id, 0]))
    const requests = Array.from({ length: reports }, (_, r) => {
      const byKey = r % 2 === 0
      // every other report lists the peers backwards: reports must not lock each other in a circle
      const order = r % 4 < 2 ? people : [...people].reverse()
      const entries = order.map((u) => {
        const i = people.indexOf(u)
        const rx = (r + 1) * 1000 + i
        const tx = (r + 1) * 7 + i * 3
        expected.set(u.id, expected.get(u.id)! + rx + tx)
        return byKey ? { public_key: keys.get(u.id)!, rx_bytes: rx, tx_bytes: tx } : { username: usernames.get(u.id)!, rx_bytes: rx, tx_bytes: tx }
      })
      return app.post("/v1/node/usage", { token: byKey ? wg.nodeToken : ovpn.nodeToken, body: entries })
    })
    const responses = await Promise.all(requests)
    figure(`node usage reports ×${reports} at once (${reports * people.length} entries) -> ${tally(responses)}`)
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 200))
    expect(responses.reduce((sum, r) => sum + (r.body.data.accepted as number), 0)).toBe(reports * people.length)
    let total = 0
    for (const [i, u] of people.entries()) {
      const current = await app.get("/v1/bandwidth/current", { token: u.token })
      expect(current.status).toBe(200)
      expect(current.body.data.used_bytes).toBe(expected.get(u.id))
      const [row] = await app.sql<{ used: number }>`select sum(rx_bytes + tx_bytes)::int8 as used from usage_records where service_id = ${serviceIds[i]!}`
      expect(Number(row!.used)).toBe(expected.get(u.id)!)
      total += expected.get(u.id)!
    }
    figure(`node usage reports ×${reports} at once -> ${total} bytes recorded, exactly the sum of the deltas`)
  }, 120_000)
})
