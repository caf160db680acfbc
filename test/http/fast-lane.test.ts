import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { newAppKey, type RunningServer, startServer } from "../instances/harness.ts"

/*
 * Issue 27: the fast lane (`src/http/FastLane.ts`) answers `GET`/`HEAD` `/v1/status` and
 * `/v1/plans` as Bun routes. The real server is started twice, lane on and `FAST_LANE=false`,
 * and every request of a table goes to both in the same order: statuses, body bytes and every
 * header (but `date`) must be the same, request ids the same where the client sent one and
 * UUIDs where not, and the request log lines and route metrics must move the same way.
 */

const ROOT = resolve(import.meta.dir, "../..")
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const LONG_ID = `trace-${"x".repeat(100)}`

interface Row {
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
}

interface Seen {
  readonly status: number
  readonly body: string
  readonly headers: ReadonlyArray<readonly [string, string]>
  readonly id: string | null
}

const send = async (base: string, row: Row): Promise<Seen> => {
  const res = await fetch(`${base}${row.path}`, { method: row.method, headers: row.headers ?? {} })
  const body = await res.text()
  const headers = [...res.headers.entries()]
    .filter(([name]) => name !== "date" && name !== "x-request-id")
    .map(([name, value]) => [name, value] as const)
    .sort(([a], [b]) => a.localeCompare(b))
  return { status: res.status, body, headers, id: res.headers.get("x-request-id") }
}

const servers: Array<RunningServer> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

/** An embedded database seeded with the demo catalogue, so `/v1/plans` has plans to list. */
const seededDataDir = async () => {
  const dir = mkdtempSync(join(tmpdir(), "vpn-fast-lane-"))
  const seed = Bun.spawn([process.execPath, "run", "src/main.ts", "seed-demo"], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: process.env["HOME"] ?? "/tmp", DATA_DIR: dir, LOG_LEVEL: "error" },
    stdout: "ignore",
    stderr: "ignore"
  })
  await seed.exited
  return dir
}

/** Lane on and off, started together on the same configuration. */
const startPair = async (env: Record<string, string>) => {
  // seeded first: a fresh embedded database's first start (initdb, migrations) can outlast the harness's wait
  const dirs = await Promise.all([seededDataDir(), seededDataDir()])
  const start = (lane: boolean, i: number) =>
    startServer({
      databaseUrl: "",
      appKey: newAppKey(),
      // a seeded directory holds the key it was seeded with
      env: { ...env, FAST_LANE: String(lane), DATA_DIR: dirs[i]!, APP_KEY: "" }
    })
  const [on, off] = await Promise.all([start(true, 0), start(false, 1)])
  servers.push(on, off)
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })
  return { on, off }
}

/** The request lines logged since `from`, fiber, time and generated ids left out. */
const requestLines = (server: RunningServer, from: number) =>
  server.output().slice(from).split("\n").filter((line) => line.includes("message=request")).map((line) => {
    expect(line).toMatch(/^timestamp=\S+Z level=INFO fiber=#\d+ message=request method=\S+ path=\S+ status=\d+ ms=[\d.]+ request_id=\S+$/)
    return line.replace(/^timestamp=\S+ /, "").replace(/fiber=#\d+/, "fiber=#").replace(/ms=[\d.]+/, "ms=").replace(
      /request_id=[0-9a-f-]{36}$/,
      "request_id=<uuid>"
    )
  })

/** Resolves once the server's output has not grown for 300 ms (at most 5 s). */
const settled = async (server: RunningServer) => {
  let length = server.output().length
  for (let quiet = 0, waited = 0; quiet < 300 && waited < 5000; waited += 50) {
    await Bun.sleep(50)
    const now = server.output().length
    quiet = now === length ? quiet + 50 : 0
    length = now
  }
}

/** The route figures of both paths and the general limit's refusals ([D102]). */
const figures = async (base: string) => {
  // a loopback address of its own (TRUST_PROXY=1): out of the limits the table counts
  const text = await (await fetch(`${base}/metrics`, { headers: { "x-forwarded-for": "127.0.0.9" } })).text()
  return text.split("\n").filter((line) =>
    (line.startsWith("vpn_api_http_requests_total{") && /route="\/v1\/(status|plans)"/.test(line)) ||
    (line.startsWith("vpn_api_http_request_duration_seconds_count{") && /route="\/v1\/(status|plans)"/.test(line)) ||
    line.startsWith("vpn_api_rate_limit_refusals_total{")
  )
}

/** `after` less `before`, by series. */
const moved = (before: ReadonlyArray<string>, after: ReadonlyArray<string>) => {
  const value = (lines: ReadonlyArray<string>) => new Map(lines.map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))]))
  const was = value(before)
  return [...value(after)].map(([series, n]) => `${series} ${n - (was.get(series) ?? 0)}`).filter((l) => !l.endsWith(" 0")).sort()
}

/** Sends every row to both servers in turn and compares what came back. */
const compare = async (pair: { on: RunningServer; off: RunningServer }, rows: ReadonlyArray<Row>) => {
  // the lane writes its log lines in batches: lines of earlier requests (the readiness polls) may
  // still be on their way; start reading once both logs have been quiet for 300 ms (at most 5 s)
  await Promise.all([settled(pair.on), settled(pair.off)])
  const logFrom = { on: pair.on.output().length, off: pair.off.output().length }
  const before = { on: await figures(pair.on.base), off: await figures(pair.off.base) }
  for (const row of rows) {
    const [on, off] = [await send(pair.on.base, row), await send(pair.off.base, row)]
    const label = `${row.method} ${row.path} ${JSON.stringify(row.headers ?? {})}`
    expect({ label, status: on.status, body: on.body, headers: on.headers }).toEqual({
      label,
      status: off.status,
      body: off.body,
      headers: off.headers
    })
    const sent = row.headers?.["x-request-id"]
    if (sent) {
      expect(on.id).toBe(sent.slice(0, 64))
      expect(off.id).toBe(sent.slice(0, 64))
    } else {
      // a UUID on both, or (the CORS preflight) on neither
      expect(on.id === null).toBe(off.id === null)
      if (off.id !== null) {
        expect(on.id).toMatch(UUID)
        expect(off.id).toMatch(UUID)
      }
    }
  }
  await Bun.sleep(100)
  const after = { on: await figures(pair.on.base), off: await figures(pair.off.base) }
  expect(moved(before.on, after.on)).toEqual(moved(before.off, after.off))
  expect(requestLines(pair.on, logFrom.on)).toEqual(requestLines(pair.off, logFrom.off))
  return { metrics: moved(before.on, after.on), lines: requestLines(pair.on, logFrom.on) }
}

const from = (address: string, extra: Record<string, string> = {}) => ({ "x-forwarded-for": address, ...extra })

describe("fast lane: the same answers as the pipeline", () => {
  test("general limit, TRUST_PROXY, request ids, HEAD, queries, other methods, log lines and metrics", async () => {
    const pair = await startPair({ LOG_LEVEL: "info", GENERAL_RATE_LIMIT: "5", TRUST_PROXY: "1" })
    const rows: Array<Row> = [
      { method: "GET", path: "/v1/status", headers: from("10.0.0.1") },
      { method: "HEAD", path: "/v1/status", headers: from("10.0.0.2") },
      { method: "GET", path: "/v1/status", headers: from("10.0.0.3", { "x-request-id": "trace-status-1" }) },
      { method: "GET", path: "/v1/status?verbose=1", headers: from("10.0.0.4", { "x-request-id": LONG_ID }) },
      { method: "GET", path: "/v1/plans", headers: from("10.0.0.5") },
      { method: "HEAD", path: "/v1/plans", headers: from("10.0.0.6", { "x-request-id": "trace-plans-head" }) },
      { method: "GET", path: "/v1/plans?page=2&x=%20y", headers: from("10.0.0.7") },
      { method: "GET", path: "/v1/plans", headers: from("10.0.0.8", { "x-request-id": "" }) },
      { method: "GET", path: "/v1/plans/", headers: from("10.0.0.9") },
      { method: "POST", path: "/v1/plans", headers: from("10.0.0.10") },
      { method: "POST", path: "/v1/status", headers: from("10.0.0.11", { "content-type": "application/json" }) },
      { method: "DELETE", path: "/v1/plans", headers: from("10.0.0.12") },
      { method: "OPTIONS", path: "/v1/status", headers: from("10.0.0.13") },
      // a bearer token (not a live one): handed to the pipeline, counted per address
      { method: "GET", path: "/v1/plans", headers: from("10.0.0.14", { authorization: "Bearer not-a-token" }) },
      { method: "HEAD", path: "/v1/status", headers: from("10.0.0.15", { authorization: "Bearer not-a-token" }) },
      // no proxy header, or one the proxy did not write: the socket's address
      { method: "GET", path: "/v1/status" },
      { method: "GET", path: "/v1/plans", headers: from("not-an-address") },
      // the nearest proxy's entry counts: the client's own entries are never read
      { method: "GET", path: "/v1/plans", headers: from("10.9.9.9, 10.0.1.1") },
      { method: "GET", path: "/v1/plans", headers: from("10.8.8.8, 10.0.1.1") }
    ]
    // one address to its limit (5 a minute) and past it, lane and pipeline counting together
    const limited = from("10.0.2.1")
    for (let i = 0; i < 4; i++) {
      rows.push({ method: "GET", path: i % 2 === 0 ? "/v1/plans" : "/v1/status", headers: limited })
    }
    rows.push({ method: "GET", path: "/v1/status", headers: { ...limited, authorization: "Bearer nope" } })
    rows.push({ method: "GET", path: "/v1/plans", headers: limited })
    rows.push({ method: "HEAD", path: "/v1/status", headers: { ...limited, "x-request-id": "trace-limited" } })
    rows.push({ method: "GET", path: "/v1/plans", headers: { ...limited, authorization: "Bearer nope" } })
    // an IPv6 client counts as its /64
    for (let i = 1; i <= 6; i++) rows.push({ method: "GET", path: "/v1/plans", headers: from(`2001:db8:1:2::${i}`) })

    const { metrics, lines } = await compare(pair, rows)
    // the table did reach the limit and the logs (not two empty sides)
    expect(metrics).toContain('vpn_api_rate_limit_refusals_total{limit="general"} 4')
    expect(lines.filter((l) => l.includes("status=429"))).toHaveLength(4)
    expect(lines.filter((l) => l.includes("method=HEAD path=/v1/status status=200"))).toHaveLength(2)
    const plans = await (await fetch(`${pair.on.base}/v1/plans`, { headers: from("10.0.3.1") })).json() as { data: Array<unknown> }
    expect(plans.data.length).toBeGreaterThan(0)
  }, 180_000)

  test("general limit off, request log off", async () => {
    const pair = await startPair({ LOG_LEVEL: "warn", GENERAL_RATE_LIMIT: "0", TRUST_PROXY: "false" })
    const rows: Array<Row> = []
    for (const path of ["/v1/status", "/v1/plans", "/v1/plans?x=1"]) {
      for (const method of ["GET", "HEAD"]) {
        rows.push({ method, path })
        rows.push({ method, path, headers: { authorization: "Bearer not-a-token", "x-request-id": "trace-off" } })
      }
    }
    rows.push({ method: "PUT", path: "/v1/plans" })
    const { lines } = await compare(pair, rows)
    expect(lines).toEqual([])
  }, 180_000)

  test("CORS_ORIGINS set: the lane stands aside, CORS answers as before", async () => {
    const pair = await startPair({ LOG_LEVEL: "info", GENERAL_RATE_LIMIT: "120", CORS_ORIGINS: "https://app.example" })
    const origin = { origin: "https://app.example" }
    await compare(pair, [
      { method: "GET", path: "/v1/status", headers: origin },
      { method: "GET", path: "/v1/plans", headers: origin },
      { method: "GET", path: "/v1/plans", headers: { origin: "https://elsewhere.example" } },
      { method: "GET", path: "/v1/plans" },
      { method: "HEAD", path: "/v1/plans", headers: origin },
      { method: "OPTIONS", path: "/v1/plans", headers: { ...origin, "access-control-request-method": "GET" } }
    ])
  }, 180_000)
})
