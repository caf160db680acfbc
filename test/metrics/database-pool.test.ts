import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D102] the database figures: pool use (max, in use, waiting) and failed queries by SQLSTATE class.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const scrape = async () => {
  const res = await app.get("/metrics", { headers: { "x-forwarded-for": "127.0.0.1" } })
  expect(res.status).toBe(200)
  const families = parsePrometheusTextFormat(res.text)
  const value = (name: string, labels: Record<string, string> = {}) => {
    const family = families.find((f) => f.name === name)
    if (family === undefined) throw new Error(`no metric ${name}`)
    const sample = family.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    return sample?.value === undefined ? undefined : Number(sample.value)
  }
  return value
}

test("pool use: its size, and a transaction holding a connection shows as in use until it ends [D102]", async () => {
  const before = await scrape()
  expect(before("vpn_api_database_pool_max_connections")).toBeGreaterThanOrEqual(1)
  expect(before("vpn_api_database_pool_waiting")).toBe(0)
  const idle = before("vpn_api_database_pool_connections_in_use")!
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  let started: () => void = () => {}
  const inside = new Promise<void>((resolve) => (started = resolve))
  const transaction = app.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`select 1`
          started()
          yield* Effect.promise(() => held)
        })
      )
    )
  )
  await inside
  const during = await scrape()
  expect(during("vpn_api_database_pool_connections_in_use")).toBeGreaterThanOrEqual(idle + 1)
  release()
  await transaction
  // a background fiber (the outbox, the jobs) may hold a connection for a moment at a scrape: the
  // transaction's connection is given back when the figure returns to the idle one within 2 s
  let after = await scrape()
  for (let i = 0; i < 40 && after("vpn_api_database_pool_connections_in_use") !== idle; i++) {
    await Bun.sleep(50)
    after = await scrape()
  }
  expect(after("vpn_api_database_pool_connections_in_use")).toBe(idle)
})

test("failed queries are counted by SQLSTATE class [D102]", async () => {
  const before = (await scrape())("vpn_api_database_query_errors_total", { sqlstate_class: "22" }) ?? 0
  await expect(app.sql`select 1 / 0`).rejects.toThrow()
  await expect(app.sql`select 'x'::int`).rejects.toThrow()
  const after = await scrape()
  expect(after("vpn_api_database_query_errors_total", { sqlstate_class: "22" })).toBe(before + 2)
})
