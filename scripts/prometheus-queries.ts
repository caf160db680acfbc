import { readFileSync } from "node:fs"

/**
 * The Prometheus side of scripts/check-prometheus.sh (issue 29, [D102]), against a running
 * Prometheus' HTTP API:
 *   series PROM_URL RULES DASHBOARD EXEMPT_JSON
 *     every metric name the rules and the dashboard use has series (waits up to 30 s), except the
 *     names of EXEMPT_JSON ({name: why});
 *   dashboard PROM_URL DASHBOARD EXEMPT_JSON
 *     every panel query (`$__rate_interval` as 1m) is valid and returns data; a query on an
 *     exempt name is still evaluated (it must be valid) but may return nothing.
 * Exits 1, saying what is missing, otherwise prints one line of figures.
 */
const [mode, prom, ...rest] = process.argv.slice(2)
if (prom === undefined) throw new Error("usage: prometheus-queries.ts series|dashboard PROM_URL ...")

interface Panel {
  readonly title: string
  readonly targets?: ReadonlyArray<{ readonly expr: string }>
}

const queriesOf = (dashboardFile: string) =>
  (JSON.parse(readFileSync(dashboardFile, "utf8")) as { panels: ReadonlyArray<Panel> }).panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr }))
  )

const metricNames = (text: string) => new Set(text.match(/vpn_api_[a-z0-9_]+/g) ?? [])

const api = async (path: string, params: Record<string, string> = {}) => {
  const response = await fetch(`${prom}${path}?${new URLSearchParams(params)}`)
  return (await response.json()) as { status: string; error?: string; data: unknown }
}

const fail = (message: string): never => {
  console.error(message)
  process.exit(1)
}

if (mode === "series") {
  const [rulesFile, dashboardFile, exemptJson] = rest
  const exempt = JSON.parse(exemptJson ?? "{}") as Record<string, string>
  const used = new Set([...metricNames(readFileSync(rulesFile!, "utf8")), ...queriesOf(dashboardFile!).flatMap((q) => [...metricNames(q.expr)])])
  const required = [...used].filter((name) => exempt[name] === undefined).sort()
  let missing: Array<string> = required
  for (let tries = 0; tries < 60 && missing.length > 0; tries++) {
    if (tries > 0) await Bun.sleep(500)
    const names = await api("/api/v1/label/__name__/values")
    const present = new Set(names.data as ReadonlyArray<string>)
    missing = required.filter((name) => !present.has(name))
  }
  if (missing.length > 0) fail(`no series in Prometheus for: ${missing.join(", ")}`)
  console.log(
    `${required.length} of the ${used.size} metric names the rules and the dashboard use have series in Prometheus; not required: ${
      Object.keys(exempt)
        .filter((n) => used.has(n))
        .join(", ") || "none"
    }`
  )
} else if (mode === "dashboard") {
  const queries = queriesOf(rest[0]!)
  const exempt = JSON.parse(rest[1] ?? "{}") as Record<string, string>
  const empty: Array<string> = []
  const allowedEmpty: Array<string> = []
  for (const q of queries) {
    const answer = await api("/api/v1/query", { query: q.expr.replaceAll("$__rate_interval", "1m") })
    if (answer.status !== "success") {
      empty.push(`${q.panel}: ${q.expr}: ${answer.error}`)
      continue
    }
    const result = (answer.data as { result: ReadonlyArray<unknown> }).result
    if (result.length > 0) continue
    const why = [...metricNames(q.expr)].find((name) => exempt[name] !== undefined)
    if (why === undefined) empty.push(`${q.panel}: ${q.expr}: no data`)
    else allowedEmpty.push(`"${q.panel}" (${why}: ${exempt[why]})`)
  }
  if (empty.length > 0) fail(`dashboard queries without data:\n  ${empty.join("\n  ")}`)
  const panels = new Set(queries.map((q) => q.panel)).size
  console.log(
    `${queries.length - allowedEmpty.length} of the ${queries.length} queries of the dashboard's ${panels} panels return data` +
      (allowedEmpty.length > 0 ? `; valid, no data yet: ${allowedEmpty.join(", ")}` : "")
  )
} else {
  fail(`unknown mode ${mode}`)
}
