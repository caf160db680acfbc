import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import parsePrometheusTextFormat, { type PrometheusFamily } from "parse-prometheus-text-format"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D102]: the outbox of [D96] in /metrics: depth (pending by channel and kind, the oldest's age),
// messages given up, and every delivery attempt by outcome (send errors counted apart).
setDefaultTimeout(30_000)

const LOCAL = { "x-forwarded-for": "127.0.0.1" }

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const scrape = async () => {
  const res = await app.get("/metrics", { headers: LOCAL })
  expect(res.status).toBe(200)
  return parsePrometheusTextFormat(res.text)
}

const family = (families: ReadonlyArray<PrometheusFamily>, name: string): PrometheusFamily => {
  const found = families.find((f) => f.name === name)
  if (found === undefined) throw new Error(`no metric ${name}`)
  return found
}

/** the value of the series of `name` whose labels are exactly `labels` */
const value = (families: ReadonlyArray<PrometheusFamily>, name: string, labels: Record<string, string>) => {
  const wanted = JSON.stringify(Object.entries(labels).sort())
  const found = family(families, name).metrics.filter((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === wanted)
  expect(found.length).toBeLessThanOrEqual(1)
  return found[0]?.value === undefined ? undefined : Number(found[0].value)
}

const register = (email: string) =>
  app.post("/v1/auth/register", {
    headers: { "x-forwarded-for": `192.0.2.${Math.floor(Math.random() * 200) + 1}` },
    body: { name: "Metric", email, password: "Str0ng-Passw0rd!", password_confirmation: "Str0ng-Passw0rd!" }
  })

const waitUntil = async (check: () => Promise<boolean>) => {
  const deadline = Date.now() + 3000
  while (!(await check()) && Date.now() < deadline) await Bun.sleep(20)
}

describe("outbox figures [D102] [D96]", () => {
  test("types and labels: pending and failed by channel and kind, the oldest pending's age by channel, attempts by outcome", async () => {
    const families = await scrape()
    expect(family(families, "vpn_api_outbox_pending_messages").type).toBe("GAUGE")
    expect(family(families, "vpn_api_outbox_failed_messages").type).toBe("GAUGE")
    expect(family(families, "vpn_api_outbox_oldest_pending_age_seconds").type).toBe("GAUGE")
    expect(family(families, "vpn_api_outbox_deliveries_total").type).toBe("COUNTER")
    expect(family(families, "vpn_api_outbox_send_errors_total").type).toBe("COUNTER")
  })

  test("a sent mail counts as sent; while SMTP fails it is pending, ageing, its errors counted; after 24 h given up and failed", async () => {
    expect((await register("sent-metric@example.com")).status).toBe(201)
    await waitUntil(async () => app.outbox.some((m) => m.to === "sent-metric@example.com"))
    let families = await scrape()
    expect(value(families, "vpn_api_outbox_deliveries_total", { channel: "mail", kind: "verify_email", outcome: "sent" })).toBe(1)
    expect(value(families, "vpn_api_outbox_send_errors_total", { channel: "mail", kind: "verify_email" })).toBeUndefined()

    app.mailer.down = true
    try {
      expect((await register("down-metric@example.com")).status).toBe(201)
      await waitUntil(async () => value(await scrape(), "vpn_api_outbox_send_errors_total", { channel: "mail", kind: "verify_email" }) === 1)
      app.clock.advance(60_000)
      families = await scrape()
      expect(value(families, "vpn_api_outbox_pending_messages", { channel: "mail", kind: "verify_email" })).toBe(1)
      expect(value(families, "vpn_api_outbox_oldest_pending_age_seconds", { channel: "mail" })).toBe(60)
      expect(value(families, "vpn_api_outbox_send_errors_total", { channel: "mail", kind: "verify_email" })).toBe(1)
      expect(value(families, "vpn_api_outbox_deliveries_total", { channel: "mail", kind: "verify_email", outcome: "error" })).toBe(1)

      // a retry fails again; a day later the message is given up
      await app.run(runJobsOnce)
      app.clock.advance(25 * 3_600_000)
      await app.run(runJobsOnce)
    } finally {
      app.mailer.down = false
    }
    families = await scrape()
    expect(value(families, "vpn_api_outbox_send_errors_total", { channel: "mail", kind: "verify_email" })).toBe(3)
    expect(value(families, "vpn_api_outbox_deliveries_total", { channel: "mail", kind: "verify_email", outcome: "given_up" })).toBe(1)
    expect(value(families, "vpn_api_outbox_failed_messages", { channel: "mail", kind: "verify_email" })).toBe(1)
    // nothing waits any more: the series stays, at 0
    expect(value(families, "vpn_api_outbox_pending_messages", { channel: "mail", kind: "verify_email" })).toBe(0)
    expect(value(families, "vpn_api_outbox_oldest_pending_age_seconds", { channel: "mail" })).toBe(0)
    // no address or subject ever becomes a label
    const text = (await app.get("/metrics", { headers: LOCAL })).text
    expect(text).not.toContain("down-metric@example.com")
    expect(text).not.toContain("Verify your e-mail")
  })
})
