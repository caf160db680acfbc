import { PgClient } from "@effect/sql-pg"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer, Redacted } from "effect"
import type pg from "pg"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { AppConfig } from "../../src/platform/Config.ts"
import { AppKey } from "../../src/platform/Crypto.ts"
import { Mailer } from "../../src/platform/Mailer.ts"
import { Metrics } from "../../src/platform/Metrics.ts"
import { testConfig } from "../support/app.ts"
import { pgClientOptions } from "../../src/platform/Database.ts"
import {
  announceSkip,
  call,
  connectSql,
  directEnv,
  freshDatabase,
  newAppKey,
  type RunningServer,
  skipReason,
  startServer,
  strongPassword,
  uniqueEmail
} from "./harness.ts"

/**
 * Suite 5 (issue 9): two server processes on different ports, one PostgreSQL [D4]. They start
 * together on an empty database (both migrate), share the spec's rate limits [D30] and the
 * tokens [D20], and run each job once [D80].
 */
announceSkip("instances")
const figures = { requests: 0, mismatches: 0, jobRuns: 0 }
let a: RunningServer
let b: RunningServer
let databaseUrl = ""
let startedAt = 0
const appKey = newAppKey()
const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * What the jobs of [D80] act on: an auto-renew service 2 days from expiry (one renewal invoice),
 * a service past its expiry (expired), an overdue invoice holding a promo use (cancelled, the use
 * given back once: 2 uses become 1).
 */
const seedJobsWorld = async (sql: pg.Client, label: string) => {
  const one = async (text: string, values: Array<unknown>) => (await sql.query<{ id: number }>(text, values)).rows[0]!.id
  const now = Date.now()
  const user = await one("insert into users (name, email, password_hash) values ($1, $2, 'x') returning id", [label, uniqueEmail(label).toLowerCase()])
  const plan = await one("insert into plans (name, bandwidth_limit_gb) values ($1, 10) returning id", [`Plan ${label}`])
  const cycle = await one("insert into billing_cycles (plan_id, name, duration_days, price, currency) values ($1, 'Monthly', 30, '9.99', 'USD') returning id", [
    plan
  ])
  const promo = await one("insert into promo_codes (code, type, value, max_uses, uses) values ($1, 'percentage', 10, 5, 2) returning id", [
    `P${label}`.slice(0, 60)
  ])
  const service = (status: string, expires: number, autoRenew: boolean) =>
    one("insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew) values ($1, $2, $3, $4, $5, $6, $7) returning id", [
      user,
      plan,
      cycle,
      status,
      new Date(now - 20 * DAY),
      new Date(expires),
      autoRenew
    ])
  const renewing = await service("active", now + 2 * DAY, true)
  const lapsed = await service("active", now - HOUR, false)
  const overdue = await one(
    "insert into invoices (user_id, plan_id, cycle_id, amount, discount, currency, status, promo_code, promo_code_id, due_date) values ($1, $2, $3, '8.99', '1.00', 'USD', 'pending', $4, $5, $6) returning id",
    [user, plan, cycle, `P${label}`, promo, new Date(now - DAY)]
  )
  return { renewing, lapsed, overdue, promo }
}

const jobsState = async (sql: pg.Client, world: Awaited<ReturnType<typeof seedJobsWorld>>) => {
  const q = async (text: string, values: Array<unknown>) => (await sql.query(text, values)).rows[0]
  return {
    renewals: Number((await q("select count(*) as n from invoices where service_id = $1 and renewal_of_expiry is not null", [world.renewing])).n),
    lapsed: (await q("select status from services where id = $1", [world.lapsed])).status,
    overdue: (await q("select status from invoices where id = $1", [world.overdue])).status,
    promoUses: (await q("select uses from promo_codes where id = $1", [world.promo])).uses
  }
}
const JOBS_DONE = { renewals: 1, lapsed: "expired", overdue: "cancelled", promoUses: 1 }
let schedulerWorld: Awaited<ReturnType<typeof seedJobsWorld>>

const on = (server: RunningServer, method: string, path: string, options: Parameters<typeof call>[3] = {}) => {
  figures.requests++
  return call(server.base, method, path, options)
}

const register = async (server: RunningServer, label: string) => {
  const email = uniqueEmail(label).toLowerCase()
  const password = strongPassword()
  const res = await on(server, "POST", "/v1/auth/register", {
    body: { name: label, email, password, password_confirmation: password },
    headers: { "x-forwarded-for": `198.51.100.${Math.floor(Math.random() * 250) + 1}` }
  })
  expect(res.status).toBe(201)
  return { email, password, token: res.body.data.token as string, id: res.body.data.user.id as number }
}

describe.skipIf(skipReason !== undefined)("suite 5: two instances, one database", () => {
  beforeAll(async () => {
    const db = await freshDatabase("instances")
    databaseUrl = db.url
    // both start at once on the empty database: both try to migrate it
    ;[a, b] = await Promise.all([
      startServer({ databaseUrl, appKey, env: { LOG_LEVEL: "warn" } }),
      startServer({ databaseUrl, appKey, env: { LOG_LEVEL: "warn" } })
    ])
    startedAt = performance.now()
    // both instances' schedulers make their first run 5 s after start, at about the same time
    const sql = await connectSql(databaseUrl)
    schedulerWorld = await seedJobsWorld(sql, "sched")
    await sql.end()
  }, 60_000)

  afterAll(async () => {
    const codes = await Promise.all([a?.stop(), b?.stop()])
    console.log(
      `[instances] two servers (ports ${a?.port}, ${b?.port}) on one database: ${figures.requests} requests, ` +
        `${figures.jobRuns} direct job runs, ${figures.mismatches} cross-instance mismatches; exit codes ${codes.join(", ")}`
    )
  })

  test("logins for one e-mail spread over both instances: the 6th is 429 on either [D30]", async () => {
    const user = await register(a, "limit-mail")
    const remaining: Array<string | null> = []
    for (let i = 0; i < 5; i++) {
      const res = await on(i % 2 === 0 ? a : b, "POST", "/v1/auth/login", {
        body: { email: user.email, password: user.password },
        headers: { "x-forwarded-for": `203.0.113.${10 + i}` }
      })
      expect(res.status).toBe(200)
      remaining.push(res.headers.get("x-ratelimit-remaining"))
    }
    expect(remaining).toEqual(["4", "3", "2", "1", "0"])
    for (const server of [a, b]) {
      const res = await on(server, "POST", "/v1/auth/login", {
        body: { email: user.email, password: user.password },
        headers: { "x-forwarded-for": `203.0.113.${server === a ? 20 : 21}` }
      })
      if (res.status !== 429) figures.mismatches++
      expect(res.status).toBe(429)
      expect(res.body).toEqual({ success: false, message: "Too Many Attempts." })
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
    }
  })

  test("logins from one address spread over both instances: the 6th is 429 on either [D30]", async () => {
    const address = "192.0.2.77"
    for (let i = 0; i < 5; i++) {
      const res = await on(i % 2 === 0 ? b : a, "POST", "/v1/auth/login", {
        body: { email: uniqueEmail(`nobody${i}`), password: "not-the-password" },
        headers: { "x-forwarded-for": address }
      })
      expect(res.status).toBe(401)
    }
    for (const server of [a, b]) {
      const res = await on(server, "POST", "/v1/auth/login", {
        body: { email: uniqueEmail("nobody-more"), password: "not-the-password" },
        headers: { "x-forwarded-for": address }
      })
      if (res.status !== 429) figures.mismatches++
      expect(res.status).toBe(429)
    }
  })

  test("tickets created on both instances share the per-user limit of 10 a minute [D30]", async () => {
    const user = await register(b, "limit-ticket")
    const statuses: Array<number> = []
    for (let i = 0; i < 12; i++) {
      const res = await on(i % 2 === 0 ? a : b, "POST", "/v1/tickets", {
        token: user.token,
        body: { subject: `Ticket ${i}`, message: "Cannot connect." },
        headers: { "x-forwarded-for": `198.18.0.${i + 1}` }
      })
      statuses.push(res.status)
    }
    expect(statuses).toEqual([...Array(10).fill(201), 429, 429])
  })

  test("a token revoked on one instance is 401 on the other at the very next request [D20]", async () => {
    const user = await register(a, "token")
    const login = await on(b, "POST", "/v1/auth/login", {
      body: { email: user.email, password: user.password },
      headers: { "x-forwarded-for": "198.19.0.1" }
    })
    expect(login.status).toBe(200)
    const token = login.body.data.token as string
    // each instance has seen the token (a cache, if any, would now hold it)
    expect((await on(a, "GET", "/v1/user", { token })).status).toBe(200)
    expect((await on(b, "GET", "/v1/user", { token })).status).toBe(200)

    expect((await on(a, "POST", "/v1/auth/logout", { token })).status).toBe(200)
    const after = await on(b, "GET", "/v1/user", { token })
    if (after.status !== 401) figures.mismatches++
    expect(after.status).toBe(401)
    expect(after.body).toEqual({ success: false, message: "Unauthenticated." })
    // the register token still works on both
    expect((await on(b, "GET", "/v1/user", { token: user.token })).status).toBe(200)

    // logout-all on B ends the tokens A has been serving
    const second = await on(a, "POST", "/v1/auth/login", {
      body: { email: user.email, password: user.password },
      headers: { "x-forwarded-for": "198.19.0.2" }
    })
    expect((await on(a, "GET", "/v1/user", { token: second.body.data.token })).status).toBe(200)
    expect((await on(b, "POST", "/v1/auth/logout-all", { token: user.token })).status).toBe(200)
    for (const t of [user.token, second.body.data.token as string]) {
      const res = await on(a, "GET", "/v1/user", { token: t })
      if (res.status !== 401) figures.mismatches++
      expect(res.status).toBe(401)
    }
  })

  test("a user disabled through one instance is refused by the other at once [D21]", async () => {
    const admin = await (async () => {
      const u = await register(a, "admin")
      const sql = await connectSql(databaseUrl)
      await sql.query("update users set role = 'admin' where id = $1", [u.id])
      await sql.end()
      return u
    })()
    const user = await register(b, "disabled")
    expect((await on(b, "GET", "/v1/user", { token: user.token })).status).toBe(200)
    const disabled = await on(a, "PUT", `/v1/admin/users/${user.id}`, { token: admin.token, body: { status: 0 } })
    expect(disabled.status).toBe(200)
    const res = await on(b, "GET", "/v1/user", { token: user.token })
    if (res.status !== 401) figures.mismatches++
    expect(res.status).toBe(401)
  })

  test("the same e-mail registered on both instances at once: one account [D13]", async () => {
    const email = uniqueEmail("twice")
    const password = strongPassword()
    const results = await Promise.all(
      [a, b, a, b].map((server, i) =>
        on(server, "POST", "/v1/auth/register", {
          body: { name: "Twice", email: i % 2 === 0 ? email : email.toUpperCase(), password, password_confirmation: password },
          headers: { "x-forwarded-for": `198.20.0.${i + 1}` }
        })
      )
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422])
    const sql = await connectSql(databaseUrl)
    const rows = await sql.query("select id from users where email = $1", [email.toLowerCase()])
    await sql.end()
    expect(rows.rowCount).toBe(1)
  })
  test("jobs run once: both instances' schedulers, then 8 runs at once from two pools [D80][D4]", async () => {
    // the two servers' first scheduled runs (5 s after start) did the work once between them
    await Bun.sleep(Math.max(0, startedAt + 7000 - performance.now()))
    const sql = await connectSql(databaseUrl)
    const bySchedulers = await jobsState(sql, schedulerWorld)
    if (JSON.stringify(bySchedulers) !== JSON.stringify(JOBS_DONE)) figures.mismatches++
    expect(bySchedulers).toEqual(JOBS_DONE)

    // a fresh world, and runJobsOnce 4 times at once on each of two pools (two instances)
    const world = await seedJobsWorld(sql, "direct")
    // the jobs' catalogue reads on the pool (no LISTEN: a run is short)
    const pool = () =>
      Layer.mergeAll(
        PgClient.layer(pgClientOptions(Redacted.make(databaseUrl), 4)),
        AppClock.Live,
        AppConfig.layer(testConfig()),
        Metrics.Live.pipe(Layer.provide(AppClock.Live)),
        AppKey.Test,
        Mailer.Test().layer
      ).pipe(Layer.orDie)
    const runs = (layer: ReturnType<typeof pool>) =>
      Effect.all(
        Array.from({ length: 4 }, () => runJobsOnce),
        { concurrency: "unbounded" }
      ).pipe(Effect.provide(layer))
    const reports = (await Promise.all([Effect.runPromise(runs(pool())), Effect.runPromise(runs(pool()))])).flat()
    figures.jobRuns += reports.length
    const total = (key: "expired" | "renewalsCreated" | "invoicesCancelled" | "promoUsesReleased") => reports.reduce((sum, r) => sum + r[key], 0)
    const byDirectRuns = await jobsState(sql, world)
    // and once more, after it all: nothing left to do
    const again = await Effect.runPromise(runJobsOnce.pipe(Effect.provide(pool())))
    figures.jobRuns++
    const afterAgain = await jobsState(sql, world)
    const schedulerAfter = await jobsState(sql, schedulerWorld)

    // the operator's CLI, twice at once as two processes, on a third world
    const cliWorld = await seedJobsWorld(sql, "cli")
    const cli = () =>
      Bun.spawn([process.execPath, "run", "src/cli.ts", "jobs", "run-once"], {
        cwd: `${import.meta.dir}/../..`,
        env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", DATABASE_URL: databaseUrl, ...directEnv(databaseUrl), APP_KEY: appKey, LOG_LEVEL: "error" },
        stdout: "pipe",
        stderr: "pipe"
      })
    const processes = [cli(), cli()]
    const cliCodes = await Promise.all(processes.map((p) => p.exited))
    const cliOut = (await Promise.all(processes.map((p) => new Response(p.stdout).text()))).join("")
    figures.jobRuns += 2
    const byCli = await jobsState(sql, cliWorld)
    await sql.end()

    console.log(
      `[instances] jobs: ${figures.jobRuns} direct runs (${reports.filter((r) => r.skipped).length} skipped on the lock) + both schedulers; ` +
        `renewal invoices ${byDirectRuns.renewals}, ${bySchedulers.renewals} and ${byCli.renewals} by two CLI processes at once (one each expected), expired ${total("expired")}, ` +
        `cancelled ${total("invoicesCancelled")}, promo uses given back ${total("promoUsesReleased")}`
    )
    expect(byDirectRuns).toEqual(JOBS_DONE)
    expect(total("renewalsCreated")).toBe(1)
    expect(total("expired")).toBe(1)
    expect(total("invoicesCancelled")).toBe(1)
    expect(total("promoUsesReleased")).toBe(1)
    expect(again).toMatchObject({ expired: 0, renewalsCreated: 0, invoicesCancelled: 0, promoUsesReleased: 0 })
    expect(afterAgain).toEqual(JOBS_DONE)
    expect(schedulerAfter).toEqual(JOBS_DONE)
    expect(cliCodes).toEqual([0, 0])
    expect(cliOut).toContain("jobs: ")
    expect(byCli).toEqual(JOBS_DONE)
  }, 45_000)
})
