import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type pg from "pg"
import {
  adminUrl,
  announceSkip,
  call,
  connectSql,
  freshAddress,
  freshDatabase,
  newAppKey,
  type RunningServer,
  skipReason,
  startServer,
  strongPassword,
  uniqueEmail
} from "./harness.ts"
import { type Replica, replicaSkipReason, startReplica } from "./replica.ts"

/**
 * [D126] `DATABASE_READ_URL`: a real streaming replica (pg_basebackup of the test PostgreSQL)
 * whose replay is paused, so it lags. The reads DECISIONS allows to lag (usage history and
 * summary, admin lists and search, the audit log) answer from it: they do not see what was
 * written after the pause, until it resumes. Everything else stays on the primary: the caller's
 * own invoices show a new order at once, and a logout is effective at the very next request
 * although the replica still holds the token.
 */
announceSkip("read-replica")
const skip = skipReason ?? replicaSkipReason()
let replica: Replica
let server: RunningServer
let sql: pg.Client
let databaseName = ""
const ADMIN_EMAIL = "replica-admin@example.test"
const ADMIN_PASSWORD = strongPassword()

const register = async () => {
  const password = strongPassword()
  const email = uniqueEmail("replica")
  const res = await call(server.base, "POST", "/v1/auth/register", {
    body: { name: "Replica", email, password, password_confirmation: password },
    headers: freshAddress()
  })
  expect(res.status).toBe(201)
  return { email: email.toLowerCase(), password, token: res.body.data.token as string, id: res.body.data.user.id as number }
}

const login = async (email: string, password: string) => {
  const res = await call(server.base, "POST", "/v1/auth/login", { body: { email, password }, headers: freshAddress() })
  expect(res.status).toBe(200)
  return res.body.data.token as string
}

describe.skipIf(skip !== undefined)("reads that may lag on a replica: DATABASE_READ_URL [D126]", () => {
  beforeAll(async () => {
    // the database first, then the replica: it holds that database from the start
    const db = await freshDatabase("replica")
    databaseName = db.name
    replica = await startReplica(adminUrl!)
    server = await startServer({
      databaseUrl: db.url,
      appKey: newAppKey(),
      env: { LOG_LEVEL: "error", DATABASE_READ_URL: replica.urlOf(db.name), ADMIN_EMAIL, ADMIN_PASSWORD }
    })
    sql = await connectSql(db.url)
  }, 90_000)

  afterAll(async () => {
    await replica?.resume().catch(() => {})
    await sql?.end()
    await server?.stop()
    await replica?.stop()
  })

  test("lagging reads come from the replica; the caller's own data and a logout do not wait for it", async () => {
    const admin = await login(ADMIN_EMAIL, ADMIN_PASSWORD)
    const user = await register()
    const second = await login(user.email, user.password)
    const one = async (text: string, values: Array<unknown>) => (await sql.query<{ id: number }>(text, values)).rows[0]!.id
    const plan = await one("insert into plans (name, bandwidth_limit_gb) values ('Replica plan', 10) returning id", [])
    const cycle = await one(
      "insert into billing_cycles (plan_id, name, duration_days, price, currency) values ($1, 'Monthly', 30, '9.99', 'USD') returning id",
      [plan]
    )
    const service = await one(
      "insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at) values ($1, $2, $3, 'active', now() - interval '1 day', now() + interval '29 days') returning id",
      [user.id, plan, cycle]
    )
    await replica.catchUp()
    const history = () => call(server.base, "GET", "/v1/bandwidth/history", { token: second })
    expect((await history()).body.data).toEqual([])

    // from now on the replica lags
    await replica.pause()
    await sql.query("insert into usage_records (service_id, period, rx_bytes, tx_bytes) values ($1, date_trunc('month', now())::date, 700, 300)", [service])
    const late = await register()
    // a sign-in: an entry of the audit log
    const lateToken = await login(late.email, late.password)
    const order = await call(server.base, "POST", "/v1/orders", { token: second, body: { plan_id: plan, cycle_id: cycle } })
    expect(order.status).toBe(201)
    const ticket = await call(server.base, "POST", "/v1/tickets", { token: second, body: { subject: "Lag", message: "Is it there?" } })
    expect(ticket.status).toBe(201)

    // the reads that may lag do not see any of it
    const stale = {
      history: await history(),
      summary: await call(server.base, "GET", "/v1/bandwidth/summary", { token: second }),
      users: await call(server.base, "GET", `/v1/admin/users?email=${encodeURIComponent(late.email)}`, { token: admin }),
      invoices: await call(server.base, "GET", `/v1/admin/invoices?user_id=${user.id}`, { token: admin }),
      tickets: await call(server.base, "GET", "/v1/admin/tickets", { token: admin }),
      audit: await call(server.base, "GET", `/v1/admin/audit?actor=${late.id}`, { token: admin }),
      activity: await call(server.base, "GET", "/v1/account/activity", { token: lateToken })
    }
    for (const res of Object.values(stale)) expect(res.status).toBe(200)
    expect(stale.history.body.data).toEqual([])
    expect(stale.summary.body.data.total_used_bytes).toBe(0)
    expect(stale.users.body.meta.total).toBe(0)
    expect(stale.invoices.body.data).toEqual([])
    expect(stale.tickets.body.data).toEqual([])
    expect(stale.audit.body.meta.total).toBe(0)
    expect(stale.activity.body.meta.total).toBe(0)

    // the caller's own data is read on the primary: the new order is there at once
    const mine = await call(server.base, "GET", "/v1/invoices", { token: second })
    expect(mine.status).toBe(200)
    expect(mine.body.data.map((i: { uuid: string }) => i.uuid)).toContain(order.body.data.uuid)

    // a logout is effective at the very next request: the token check is on the primary, though
    // the lagging replica still holds the token
    const out = await call(server.base, "POST", "/v1/auth/logout", { token: user.token })
    expect(out.status).toBe(200)
    const refused = await call(server.base, "GET", "/v1/bandwidth/history", { token: user.token })
    expect(refused.status).toBe(401)
    const onReplica = await connectSql(replica.urlOf(databaseName))
    try {
      const { rows } = await onReplica.query<{ n: number }>("select count(*)::int as n from access_tokens where user_id = $1", [user.id])
      expect(rows[0]!.n).toBe(2)
    } finally {
      await onReplica.end()
    }

    // the replica catches up: the same reads now show everything
    await replica.resume()
    await replica.catchUp()
    const fresh = {
      history: await history(),
      users: await call(server.base, "GET", `/v1/admin/users?email=${encodeURIComponent(late.email)}`, { token: admin }),
      invoices: await call(server.base, "GET", `/v1/admin/invoices?user_id=${user.id}`, { token: admin }),
      tickets: await call(server.base, "GET", "/v1/admin/tickets", { token: admin }),
      activity: await call(server.base, "GET", "/v1/account/activity", { token: lateToken })
    }
    expect(fresh.history.body.data).toHaveLength(1)
    expect(fresh.history.body.data[0].used_bytes).toBe(1000)
    expect(fresh.users.body.meta.total).toBe(1)
    expect(fresh.invoices.body.data.map((i: { uuid: string }) => i.uuid)).toEqual([order.body.data.uuid])
    expect(fresh.tickets.body.data.map((t: { id: number }) => t.id)).toContain(ticket.body.data.id)
    expect(fresh.activity.body.data.map((e: { event: string }) => e.event)).toContain("sign_in")
    const audit = await call(server.base, "GET", `/v1/admin/audit?actor=${late.id}`, { token: admin })
    expect(audit.body.meta.total).toBeGreaterThan(0)
  }, 60_000)
})
