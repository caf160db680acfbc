import { SqlClient } from "@effect/sql"
import { afterAll, beforeAll, expect, test } from "bun:test"
import { Effect } from "effect"
import { DEMO_ADMIN, DEMO_USER, seedDemo } from "../../src/demo/SeedDemo.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 7: seed-demo fills an empty database; running it twice leaves one copy.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const counts = async () => {
  const tables = [
    "users",
    "plans",
    "billing_cycles",
    "promo_codes",
    "servers",
    "server_plans",
    "faq_entries",
    "services",
    "invoices",
    "usage_records",
    "tickets",
    "ticket_replies",
    "vpn_credentials"
  ]
  const out: Record<string, number> = {}
  for (const t of tables) {
    out[t] = await app.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.map(sql<{ n: number }>`select count(*)::int as n from ${sql(t)}`, (rows) => rows[0]!.n))
    )
  }
  return out
}

test("the demo data set: three plans, two cycles each, two promos, six servers, FAQ, a demo user with everything", async () => {
  const first = await app.run(seedDemo)
  expect(first.nodeTokens).toHaveLength(6)
  const c = await counts()
  expect(c).toMatchObject({
    users: 2,
    plans: 3,
    billing_cycles: 6,
    promo_codes: 2,
    servers: 6,
    services: 1,
    invoices: 3,
    usage_records: 6,
    tickets: 1,
    ticket_replies: 2
  })
  const statuses = await app.sql<{ status: string }>`select distinct status from invoices order by status`
  expect(statuses.map((s) => s.status)).toEqual(["cancelled", "paid", "pending"])
  const countries = await app.sql<{ n: number }>`select count(distinct country)::int as n from servers`
  expect(countries[0]!.n).toBeGreaterThan(3)
  const protocols = await app.sql<{ protocol: string }>`select distinct protocol from servers order by protocol`
  expect(protocols.map((p) => p.protocol)).toEqual(["openvpn", "wireguard"])
  const unlimited = await app.sql`select 1 from plans where bandwidth_limit_gb = 0`
  expect(unlimited).toHaveLength(1)
  const trial = await app.sql`select 1 from plans where trial_days > 0`
  expect(trial).toHaveLength(1)
  const staff = await app.sql`select 1 from ticket_replies where is_admin`
  expect(staff).toHaveLength(1)
  const [admin] = await app.sql<{ role: string; password_hash: string }>`select role, password_hash from users where email = ${DEMO_ADMIN.email}`
  expect(admin!.role).toBe("admin")
  expect(await Bun.password.verify(DEMO_ADMIN.password, admin!.password_hash)).toBe(true)
  const [user] = await app.sql<{ password_hash: string }>`select password_hash from users where email = ${DEMO_USER.email}`
  expect(await Bun.password.verify(DEMO_USER.password, user!.password_hash)).toBe(true)

  const second = await app.run(seedDemo)
  expect(second.created).toEqual([])
  expect(second.nodeTokens).toEqual([])
  expect(await counts()).toEqual(c)
})
