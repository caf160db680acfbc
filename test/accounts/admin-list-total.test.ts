import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer, Option, Redacted } from "effect"
import { AccountsStartup } from "../../src/accounts/Startup.ts"
import { EXACT_TOTAL_LIMIT } from "../../src/accounts/Users.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// Issue 27, [D70]: the unfiltered admin user list does not count a million rows for a page of 15.
const ADMIN_EMAIL = "root@example.com"
const ADMIN_PASSWORD = "Admin-Str0ng-Secret"

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({
    config: { adminEmail: Option.some(ADMIN_EMAIL), adminPassword: Option.some(Redacted.make(ADMIN_PASSWORD)) }
  })
})
afterAll(() => app.dispose())

const startup = () => app.run(Effect.scoped(Layer.build(AccountsStartup)))

/** the seeded admin signed in, as a typed client */
const signedInAdmin = async () => {
  const anonymous = await typedClient(app)
  const login = await ok(anonymous.accounts.login({ payload: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } }))
  return typedClient(app, { token: login.token })
}

describe("GET /v1/admin/users without a filter: the total (issue 27, [D70])", () => {
  test("exact up to EXACT_TOTAL_LIMIT users; above, PostgreSQL's estimate (never below the limit + 1); a filter counts exactly", async () => {
    await app.sql`delete from users where email <> ${ADMIN_EMAIL}`
    await startup()
    const admin = await signedInAdmin()
    const add = (from: number, n: number) =>
      app.sql`insert into users (name, email, password_hash)
              select 'Many ' || i, 'many' || i || '@estimate.test', 'x' from generate_series(${from}::int, ${from + n - 1}::int) as i`
    // the admin and LIMIT - 1 others: exactly the limit, counted
    await add(0, EXACT_TOTAL_LIMIT - 1)
    const atLimit = await ok(admin.accountsAdmin.listUsers({ urlParams: { page: 2 } }))
    expect(atLimit.meta).toEqual({ current_page: 2, last_page: Math.ceil(EXACT_TOTAL_LIMIT / 15), per_page: 15, total: EXACT_TOTAL_LIMIT })
    expect(atLimit.data).toHaveLength(15)

    // five more, then ANALYZE: the estimate is the table's rows
    await add(EXACT_TOTAL_LIMIT, 5)
    await app.sql`analyze users`
    const estimated = await ok(admin.accountsAdmin.listUsers({ urlParams: {} }))
    expect(estimated.meta.total).toBe(EXACT_TOTAL_LIMIT + 5)
    expect(estimated.meta.last_page).toBe(Math.ceil((EXACT_TOTAL_LIMIT + 5) / 15))

    // three more without ANALYZE: the total is the estimate, not a count of every row
    await add(EXACT_TOTAL_LIMIT + 5, 3)
    const stale = await ok(admin.accountsAdmin.listUsers({ urlParams: {} }))
    expect(stale.meta.total).toBe(EXACT_TOTAL_LIMIT + 5)
    // the last page by id still holds the newest users: pages are read, not computed from the total
    const last = await ok(admin.accountsAdmin.listUsers({ urlParams: { page: Math.ceil((EXACT_TOTAL_LIMIT + 8) / 15) } }))
    expect(last.data.at(-1)?.email).toBe(`many${EXACT_TOTAL_LIMIT + 7}@estimate.test`)

    // a filter is counted exactly
    const filtered = await ok(admin.accountsAdmin.listUsers({ urlParams: { email: `many${EXACT_TOTAL_LIMIT / 10}` } }))
    // many1000 and many10000 .. many10007
    expect(filtered.meta.total).toBe(9)

    // an estimate over twice the limit is the total as it is (no capped count is read for it)
    await add(EXACT_TOTAL_LIMIT + 8, EXACT_TOTAL_LIMIT + 2)
    await app.sql`analyze users`
    const big = await ok(admin.accountsAdmin.listUsers({ urlParams: { page: 2 } }))
    expect(big.meta).toEqual({
      current_page: 2,
      last_page: Math.ceil((EXACT_TOTAL_LIMIT * 2 + 10) / 15),
      per_page: 15,
      total: EXACT_TOTAL_LIMIT * 2 + 10
    })
    expect(big.data).toHaveLength(15)
    await app.sql`delete from users where email like '%@estimate.test'`
  }, 60_000)
})
