import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { catalogAdmin } from "./helpers.ts"

// Issue 34: concurrent admin updates of one plan that together would break [D104]'s rule
// (`throttle_mbps` set exactly when `quota_action` is `throttle`) hit the table's CHECK and
// answered 500. Each update is now checked against the plan row it locked: every request is a 200
// or the 422 the single-request validation gives. Real parallel requests; run on PostgreSQL too:
//   scripts/with-postgres.sh bash -c 'TEST_DATABASE_URL="$PG_URL" bun test test/catalog/plan-update-races.test.ts'
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
})
afterAll(() => app.dispose())

const REQUIRED = "The throttle mbps field is required when quota action is throttle."
const PROHIBITED = "The throttle mbps field is prohibited unless quota action is throttle."

describe("concurrent plan updates keep the throttle rule [D104] (issue 34)", () => {
  test("8 rounds of 24 updates at once (throttle with a speed, suspend, a speed alone, throttle alone): 200 or the single-request 422, never a 500", async () => {
    const plan = await admin.createPlan()
    const bodies: ReadonlyArray<Record<string, unknown>> = [
      { quota_action: "throttle", throttle_mbps: 5 },
      { quota_action: "suspend" },
      { throttle_mbps: 7 },
      { quota_action: "throttle" }
    ]
    for (let round = 0; round < 8; round++) {
      const results = await Promise.all(
        Array.from({ length: 24 }, (_, i) => app.put(`/v1/admin/plans/${plan.id}`, { token: admin.token, body: bodies[(i + round) % bodies.length] }))
      )
      for (const res of results) {
        expect([200, 422]).toContain(res.status)
        if (res.status === 422) {
          expect(res.body).toEqual({ success: false, message: "The given data was invalid.", errors: { throttle_mbps: [expect.any(String)] } })
          expect([REQUIRED, PROHIBITED]).toContain(res.body.errors.throttle_mbps[0])
        } else {
          expect((res.body.data.quota_action === "throttle") === (res.body.data.throttle_mbps !== null)).toBe(true)
        }
      }
      const [row] = await app.sql<{ quota_action: string; throttle_mbps: number | null }>`select quota_action, throttle_mbps from plans where id = ${plan.id}`
      expect((row!.quota_action === "throttle") === (row!.throttle_mbps !== null)).toBe(true)
    }
  }, 60_000)
})
