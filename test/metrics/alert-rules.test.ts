import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import parsePrometheusTextFormat from "parse-prometheus-text-format"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 29, [D102]: the alert rules (deploy/prometheus/alerts.yml) and the Grafana dashboard
// (deploy/grafana/dashboard.json) name only metrics GET /metrics exports, so renaming a metric
// breaks this test at once (scripts/check-prometheus.sh proves the same against a real
// Prometheus in CI). The node agents' figures of [D105] are required once /metrics exports them.

const LOCAL = { "x-forwarded-for": "127.0.0.1" }
const PUSH_FIGURES = new Set(["vpn_api_node_agent_connected", "vpn_api_node_agent_lag_revisions"])

const rules = readFileSync(new URL("../../deploy/prometheus/alerts.yml", import.meta.url), "utf8")
const dashboard = JSON.parse(readFileSync(new URL("../../deploy/grafana/dashboard.json", import.meta.url), "utf8")) as {
  panels: ReadonlyArray<{ title: string; type: string; targets?: ReadonlyArray<{ expr: string }> }>
}
const namesIn = (text: string) => new Set(text.match(/vpn_api_[a-z0-9_]+/g) ?? [])
/** a histogram's series name its family: `_bucket`, `_count` and `_sum` of it */
const familyOf = (name: string, families: ReadonlySet<string>) => (families.has(name) ? name : name.replace(/_(bucket|count|sum)$/, ""))

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

describe("alert rules and dashboard against /metrics [D102]", () => {
  test("every metric the rules and the dashboard's queries name is exported by /metrics", async () => {
    const res = await app.get("/metrics", { headers: LOCAL })
    expect(res.status).toBe(200)
    const exported = new Set(parsePrometheusTextFormat(res.text).map((f) => f.name))
    const used = new Set([...namesIn(rules), ...dashboard.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => [...namesIn(t.expr)]))])
    expect(used.size).toBeGreaterThan(20)
    const missing = [...used]
      .filter((name) => !exported.has(familyOf(name, exported)))
      .filter((name) => !(PUSH_FIGURES.has(name) && ![...exported].some((f) => PUSH_FIGURES.has(f))))
    expect(missing).toEqual([])
  })

  test("the dashboard has a panel for traffic, errors, latency, pool, jobs, outbox, webhooks and nodes, each with a query", () => {
    const panels = dashboard.panels.filter((p) => p.type !== "row")
    for (const panel of panels) expect(panel.targets?.length ?? 0).toBeGreaterThan(0)
    const rows = dashboard.panels.filter((p) => p.type === "row").map((p) => p.title)
    expect(rows).toEqual(["Traffic", "Errors", "Latency", "Database pool", "Jobs", "Outbox and notices", "Webhooks", "Nodes", "Abuse"])
  })

  test("every alert has a severity, a summary and a description", () => {
    const alerts = rules.split("\n      - alert: ").slice(1)
    expect(alerts.length).toBe(22)
    for (const alert of alerts) {
      expect(alert).toMatch(/severity: (critical|warning)/)
      expect(alert).toContain("summary: ")
      expect(alert).toContain("description: >-")
    }
  })
})
