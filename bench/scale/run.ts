/**
 * `bun run bench:scale` (issue 18): does the API's cost stay flat as the data grows?
 *
 * One throwaway PostgreSQL 15 holds two databases seeded with plain SQL (bench/scale/seed.ts):
 * small (1 000 users, 500 peers) and large (1 000 000 users, invoices and services, 10 000 000
 * usage rows, 100 000 peers on one server of 500; `SCALE=0.1` shrinks the large one). At each
 * size the server (`bun run src/main.ts`) is started on its database and every path is sampled
 * with fetch: median and p99 of each user-facing read (token auth included), a first WireGuard
 * download, the admin e-mail search, the node's peers, a 5 000-entry usage and counters report,
 * and a jobs run with 10% of the services and invoices due (100 000 at the full size) while
 * `GET /v1/plans` and an authenticated read are measured. At the large size every statement of
 * one pass over the request paths is EXPLAINed by `auto_explain`; a sequential scan of a big
 * table is reported. Prints the table with the large/small ratio and writes JSON under
 * bench/results/.
 *
 * Knobs: SCALE (1), SCALE_SAMPLES (200 per read), SCALE_ONLY=small|large, SCALE_PATHS=<ids,...>
 * (only these paths; no EXPLAIN pass, and no jobs run unless SCALE_JOBS=1), SCALE_JOBS_BASELINE=start
 * (the jobs run's baseline is the server's first seconds, as before issue 27, instead of a warm minute).
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { cpus, loadavg } from "node:os"
import { join, resolve } from "node:path"
import { SQL } from "bun"
import { startPostgres } from "../lib/postgres.ts"
import { startServer, stopServer } from "../lib/server.ts"
import { peakRssMb, resetPeak, rssMb, run } from "../lib/proc.ts"
import { nodeToken, peerKey, type ScaleData, seedScale, type Size, userToken } from "./seed.ts"
import { startLoopLag } from "../lib/loop-lag.ts"
import { clearStalls, describeStalls, lagFile, LOOP_LAG_PRELOAD, readStalls, type StallReport, stallReport, type Timed } from "./stalls.ts"

const ROOT = resolve(import.meta.dir, "../..")
const SCALE = Number(process.env.SCALE ?? 1)
const SAMPLES = Number(process.env.SCALE_SAMPLES ?? 200)
const ONLY = process.env.SCALE_ONLY
/** issue 27: the jobs run's baseline is a minute of the warm server (`SCALE_JOBS_BASELINE=start`: its first seconds, as before) */
const WARM_BASELINE = process.env.SCALE_JOBS_BASELINE !== "start"
const PATHS = process.env.SCALE_PATHS?.split(",")
  .map((p) => p.trim())
  .filter(Boolean)
const BUN = process.execPath
const ENTRIES = 5_000
/** tables that are big at the large size: a sequential scan of one on a request path is a finding */
const BIG_TABLES = [
  "users",
  "access_tokens",
  "services",
  "invoices",
  "usage_records",
  "wireguard_peers",
  "tickets",
  "ticket_replies",
  "peer_counters",
  "usage_reports",
  "vpn_credentials",
  "mail_tokens"
]

const SIZES: ReadonlyArray<Size> = [
  { label: "small", users: 1_000, peers: 500 },
  { label: "large", users: Math.round(1_000_000 * SCALE), peers: Math.round(100_000 * SCALE) }
].filter((s) => !ONLY || s.label === ONLY) as ReadonlyArray<Size>

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const round = (x: number, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : null)

interface Stats {
  readonly n: number
  readonly medianMs: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly errors: number
  readonly firstError?: string
  readonly bytes?: number
}

const stats = (latencies: ReadonlyArray<number>, errors: number, firstError?: string, bytes?: number): Stats => {
  const s = [...latencies].sort((a, b) => a - b)
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN
  return {
    n: s.length,
    medianMs: round(at(0.5), 2)!,
    p99Ms: round(at(0.99), 2)!,
    maxMs: round(s.at(-1) ?? NaN, 2)!,
    errors,
    ...(firstError ? { firstError } : {}),
    ...(bytes !== undefined ? { bytes } : {})
  }
}

interface Req {
  readonly path: string
  readonly method?: string
  readonly token?: string
  readonly body?: string
  readonly headers?: Record<string, string>
}

const send = async (base: string, r: Req) => {
  const headers: Record<string, string> = { accept: "application/json", ...r.headers }
  if (r.token) headers.authorization = `Bearer ${r.token}`
  if (r.body !== undefined) headers["content-type"] = "application/json"
  const t = performance.now()
  try {
    const res = await fetch(base + r.path, { method: r.method ?? "GET", headers, ...(r.body !== undefined ? { body: r.body } : {}) })
    const text = await res.text()
    return { ms: performance.now() - t, status: res.status, text }
  } catch (e) {
    // the server closed the connection (Bun's 10 s request timeout): a failed request, not a crash
    return { ms: performance.now() - t, status: 599, text: String(e) }
  }
}

interface Raw {
  readonly latencies: ReadonlyArray<number>
  /** each request's start (epoch ms) and duration, for laying them over the server's stalls */
  readonly timed: ReadonlyArray<Timed>
  readonly errors: number
  readonly firstError: string | undefined
  readonly bytes: number
}

/** `n` requests from `concurrency` workers; `make(i)` gives the i-th */
const sample = async (base: string, n: number, concurrency: number, make: (i: number) => Req): Promise<Raw> => {
  const latencies: Array<number> = []
  const timed: Array<Timed> = []
  let errors = 0
  let firstError: string | undefined
  let next = 0
  let bytes = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++
        const start = Date.now()
        const r = await send(base, make(i))
        latencies.push(r.ms)
        timed.push({ start, ms: r.ms })
        bytes = r.text.length
        if (r.status >= 400) {
          errors++
          firstError ??= `${r.status} ${r.text.slice(0, 200)}`
        }
      }
    })
  )
  return { latencies, timed, errors, firstError, bytes }
}

// ---- the server ------------------------------------------------------------------------------

// ---- the paths -------------------------------------------------------------------------------

interface Scenario {
  readonly id: string
  readonly title: string
  /** requests measured (defaults to SAMPLES) */
  readonly n?: (size: Size) => number
  readonly concurrency?: number
  /** warm-up requests before measuring (0 for requests that consume something) */
  readonly warmup?: number
  readonly make: (d: ScaleData, i: number) => Req
}

const usageBody = (i: number, peers: number) =>
  JSON.stringify(Array.from({ length: ENTRIES }, (_, k) => ({ public_key: peerKey((k % Math.min(peers, ENTRIES)) + 1), rx_bytes: 1000 + i, tx_bytes: 500 })))
const countersBody = (i: number, peers: number) =>
  JSON.stringify(
    Array.from({ length: ENTRIES }, (_, k) => ({
      // distinct keys: the peers of server 1 first, then keys no peer has (counted as unknown)
      public_key: k < peers ? peerKey(k + 1) : `U${String(k).padStart(42, "0")}=`,
      rx_total: 1_000_000 + i * 1000 + k,
      tx_total: 500_000 + i * 500
    }))
  )

const READS: ReadonlyArray<Scenario> = [
  { id: "status", title: "GET /v1/status", make: () => ({ path: "/v1/status" }) },
  { id: "plans", title: "GET /v1/plans", make: () => ({ path: "/v1/plans" }) },
  { id: "plan", title: "GET /v1/plans/{plan}", make: (d) => ({ path: `/v1/plans/${d.planId}` }) },
  { id: "cycles", title: "GET /v1/plans/{plan}/cycles", make: (d) => ({ path: `/v1/plans/${d.planId}/cycles` }) },
  { id: "faq", title: "GET /v1/faq", make: () => ({ path: "/v1/faq" }) },
  { id: "user", title: "GET /v1/user (token auth)", make: (d) => ({ path: "/v1/user", token: userToken(d.measured) }) },
  { id: "profile", title: "GET /v1/account/profile", make: (d) => ({ path: "/v1/account/profile", token: userToken(d.measured) }) },
  { id: "settings", title: "GET /v1/account/settings", make: (d) => ({ path: "/v1/account/settings", token: userToken(d.measured) }) },
  { id: "servers", title: "GET /v1/servers (500 servers)", make: (d) => ({ path: "/v1/servers", token: userToken(d.measured) }) },
  { id: "server", title: "GET /v1/servers/{server}", make: (d) => ({ path: "/v1/servers/1", token: userToken(d.measured) }) },
  { id: "services", title: "GET /v1/services", make: (d) => ({ path: "/v1/services", token: userToken(d.measured) }) },
  { id: "services-current", title: "GET /v1/services/current", make: (d) => ({ path: "/v1/services/current", token: userToken(d.measured) }) },
  { id: "service", title: "GET /v1/services/{service}", make: (d) => ({ path: `/v1/services/${d.serviceId}`, token: userToken(d.measured) }) },
  {
    id: "service-bandwidth",
    title: "GET /v1/services/{service}/bandwidth",
    make: (d) => ({ path: `/v1/services/${d.serviceId}/bandwidth`, token: userToken(d.measured) })
  },
  { id: "bandwidth-current", title: "GET /v1/bandwidth/current", make: (d) => ({ path: "/v1/bandwidth/current", token: userToken(d.measured) }) },
  { id: "bandwidth-history", title: "GET /v1/bandwidth/history", make: (d) => ({ path: "/v1/bandwidth/history", token: userToken(d.measured) }) },
  { id: "bandwidth-summary", title: "GET /v1/bandwidth/summary", make: (d) => ({ path: "/v1/bandwidth/summary", token: userToken(d.measured) }) },
  { id: "invoices", title: "GET /v1/invoices", make: (d) => ({ path: "/v1/invoices", token: userToken(d.measured) }) },
  { id: "invoices-page-2", title: "GET /v1/invoices?page=2", make: (d) => ({ path: "/v1/invoices?page=2", token: userToken(d.measured) }) },
  { id: "invoice", title: "GET /v1/invoices/{uuid}", make: (d) => ({ path: `/v1/invoices/${d.invoiceUuid}`, token: userToken(d.measured) }) },
  { id: "tickets", title: "GET /v1/tickets", make: (d) => ({ path: "/v1/tickets", token: userToken(d.measured) }) },
  { id: "ticket", title: "GET /v1/tickets/{ticket}", make: (d) => ({ path: `/v1/tickets/${d.ticketId}`, token: userToken(d.measured) }) },
  {
    id: "vpn-credentials",
    title: "GET /v1/account/vpn-credentials",
    make: (d) => ({ path: "/v1/account/vpn-credentials", token: userToken(d.measured) })
  },
  {
    id: "wireguard-existing",
    title: "GET /v1/servers/{server}/wireguard (existing peer)",
    make: (d) => ({ path: "/v1/servers/1/wireguard", token: userToken(d.measured) })
  }
]

const OTHERS: ReadonlyArray<Scenario> = [
  {
    id: "wireguard-first",
    title: "first WireGuard download (allocation), one at a time",
    n: () => 150,
    concurrency: 1,
    warmup: 0,
    make: (d, i) => ({ path: "/v1/servers/1/wireguard", token: userToken(d.freshUsers[i]!) })
  },
  {
    id: "wireguard-first-10",
    title: "first WireGuard download on a server of 10 peers, one at a time",
    n: () => 150,
    concurrency: 1,
    warmup: 0,
    // a server of its own for each download (servers 2..500 hold 10 peers each)
    make: (d, i) => ({ path: `/v1/servers/${2 + (i % 400)}/wireguard`, token: userToken(d.freshUsers[i]!) })
  },
  {
    id: "wireguard-first-20",
    title: "first WireGuard download, 20 at once",
    n: () => 200,
    concurrency: 20,
    warmup: 0,
    make: (d, i) => ({ path: "/v1/servers/1/wireguard", token: userToken(d.freshUsers[150 + i]!) })
  },
  {
    id: "admin-search",
    title: "GET /v1/admin/users?email=<part of one address>",
    make: (d, i) => ({ path: `/v1/admin/users?email=user${((d.measured + i * 7) % d.size.users) + 1}@`, token: userToken(1) })
  },
  {
    id: "admin-search-short",
    title: "GET /v1/admin/users?email=<4 digits> (many matches)",
    make: (_d, i) => ({ path: `/v1/admin/users?email=${String(1000 + ((i * 37) % 9000))}`, token: userToken(1) })
  },
  {
    id: "admin-list",
    title: "GET /v1/admin/users (no filter, counts every user)",
    n: () => 50,
    make: () => ({ path: "/v1/admin/users?page=3", token: userToken(1) })
  },
  {
    id: "node-peers",
    title: "GET /v1/node/peers (every peer of server 1)",
    // streamed in pages of 1 000 peers by key (issue 27); the server's RSS is printed around it
    n: (s) => (s.peers > 20_000 ? 10 : 30),
    concurrency: 1,
    warmup: 0,
    make: () => ({ path: "/v1/node/peers", token: nodeToken(1) })
  },
  {
    id: "node-usage",
    title: `POST /v1/node/usage, ${ENTRIES} entries (Idempotency-Key)`,
    n: () => 40,
    concurrency: 1,
    warmup: 2,
    make: (d, i) => ({
      path: "/v1/node/usage",
      method: "POST",
      token: nodeToken(1),
      headers: { "idempotency-key": `bench-${d.size.label}-usage-${i}-${Math.random()}` },
      body: usageBody(i, d.size.peers)
    })
  },
  {
    id: "node-counters",
    title: `POST /v1/node/counters, ${ENTRIES} entries`,
    n: () => 40,
    concurrency: 1,
    warmup: 2,
    make: (d, i) => ({
      path: "/v1/node/counters",
      method: "POST",
      token: nodeToken(1),
      headers: { "idempotency-key": `bench-${d.size.label}-counters-${i}-${Math.random()}` },
      body: countersBody(i, d.size.peers)
    })
  }
]

// ---- EXPLAIN: auto_explain over one pass ------------------------------------------------------

interface PlanFinding {
  readonly query: string
  readonly tables: ReadonlyArray<string>
  readonly ms: number
}

const explainPass = async (
  adminUrl: string,
  db: string,
  env: Record<string, string>,
  logFile: string,
  d: ScaleData
): Promise<{ statements: number; seqScans: ReadonlyArray<PlanFinding> }> => {
  const admin = new SQL(adminUrl, { max: 1 })
  await admin.unsafe(`alter database ${db} set session_preload_libraries = 'auto_explain'`)
  await admin.unsafe(`alter database ${db} set auto_explain.log_min_duration = 0`)
  await admin.unsafe(`alter database ${db} set auto_explain.log_nested_statements = on`)
  const from = statSync(logFile).size
  const server = await startServer(env)
  try {
    for (const s of [...READS, ...OTHERS]) {
      if (s.id === "wireguard-first") {
        await send(server.base, s.make(d, 370)) // users the measurements left without a peer
      } else if (s.id === "wireguard-first-20") {
        await send(server.base, s.make(d, 380 - 150))
      } else if (s.id === "wireguard-first-10") {
        await send(server.base, s.make(d, 399))
      } else {
        await send(server.base, s.make(d, 10_000))
      }
    }
  } finally {
    await stopServer(server)
    await admin.unsafe(`alter database ${db} reset all`)
    await admin.close()
  }
  // a table of a few thousand rows is rightly read whole: only big ones count
  const sizes = new SQL(adminUrl.replace(/\/postgres$/, `/${db}`), { max: 1 })
  const rows = await sizes.unsafe(`select relname::text as name, reltuples::float8 as n from pg_class where relkind = 'r'`)
  await sizes.close()
  const big = new Set((rows as Array<{ name: string; n: number }>).filter((r) => BIG_TABLES.includes(r.name) && r.n >= 10_000).map((r) => r.name))
  const text = readFileSync(logFile, "utf8").slice(from)
  const blocks = text.split(/\n(?=\S)/).filter((b) => b.includes("plan:") && b.includes("Query Text:"))
  const seqScans: Array<PlanFinding> = []
  for (const block of blocks) {
    const query = (
      /Query Text: ([\s\S]*?)\n\s*(?:[A-Z][a-zA-Z ]+(?:Scan|Join|Loop|Aggregate|Sort|Limit|Result|Insert|Update|Delete|Unique|Hash|Append|Materialize|Gather|SetOp|Subquery|Function|Values|ModifyTable|LockRows|WindowAgg|CTE)|->)/.exec(
        block
      )?.[1] ?? ""
    )
      .replace(/\s+/g, " ")
      .trim()
    const tables = [...block.matchAll(/Seq Scan on (\w+)/g)].map((m) => m[1]!).filter((t) => big.has(t))
    const ms = Number(/duration: ([\d.]+) ms/.exec(block)?.[1] ?? NaN)
    if (tables.length > 0) seqScans.push({ query: query.slice(0, 300), tables: [...new Set(tables)], ms })
  }
  return { statements: blocks.length, seqScans }
}

// ---- the jobs --------------------------------------------------------------------------------

/**
 * A jobs run as production does it: the server's own scheduler (a run 5 s after start, then
 * every 60 s, [D80]). A server starts; 10 s after it is ready 10% of the services are made past
 * their expiry and as many invoices pending past their due date, and the scheduler's next run does
 * them; `GET /v1/plans` and an authenticated read are probed from its start (the baseline, before
 * the run: a warm minute) until no due row is left (during the run).
 */
const jobsRun = async (url: string, env: Record<string, string>, d: ScaleData) => {
  const due = Math.round(d.size.users / 10)
  const sql = new SQL(url, { max: 1 })
  const makeDue = () =>
    sql.unsafe(`
    update services set expires_at = now() - interval '1 minute' where id % 10 = 3;
    update invoices set status = 'pending', paid_at = null, due_date = now() - interval '1 day'
      where id in (select id from invoices where service_id % 10 = 7 and user_id <> ${d.measured} order by id limit ${due});
    analyze services; analyze invoices;`)
  if (!WARM_BASELINE) await makeDue()
  const remaining = async () => {
    const [r] = await sql.unsafe(`
      select (select count(*) from services where status in ('active', 'suspended') and expires_at <= now())::int
           + (select count(*) from invoices where status = 'pending' and due_date < now())::int as n`)
    return r.n as number
  }
  let initial = await remaining()
  const lag = lagFile(`jobs-${d.size.label}`)
  clearStalls(lag)
  const server = await startServer({ ...env, LOOP_LAG_FILE: lag }, { preload: [LOOP_LAG_PRELOAD] })
  const ready = performance.now()
  let began: number | undefined
  let ended: number | undefined
  // issue 27: the warm baseline. The rows become due 10 s after the server is ready (its
  // scheduler's first run, 5 s after start, has found nothing), and its next run, 60 s after that
  // one, does them: the baseline is a minute of a warm server, not its first seconds. The update
  // itself (and a second after it) is left out of the baseline.
  let updating: readonly [number, number] | undefined
  const dueMade = !WARM_BASELINE
    ? Promise.resolve()
    : sleep(10_000).then(async () => {
        const from = performance.now()
        await makeDue()
        initial = await remaining()
        updating = [from, performance.now() + 1000]
      })
  const probe = async (make: () => Req) => {
    const samples: Array<{ at: number; start: number; ms: number; ok: boolean }> = []
    while (ended === undefined && performance.now() - ready < 600_000) {
      const at = performance.now()
      const start = Date.now()
      const r = await send(server.base, make())
      samples.push({ at, start, ms: r.ms, ok: r.status < 400 })
      await sleep(5)
    }
    return samples
  }
  const watch = async () => {
    await dueMade
    while (performance.now() - ready < 600_000) {
      const n = await remaining()
      if (began === undefined && n < initial) began = performance.now()
      if (n === 0) {
        ended = performance.now()
        return
      }
      await sleep(100)
    }
    ended = performance.now()
  }
  const [plans, current] = await Promise.all([
    probe(() => ({ path: "/v1/plans" })),
    probe(() => ({ path: "/v1/services/current", token: userToken(d.measured) })),
    watch()
  ])
  await sleep(1100) // the server writes its stalls once a second
  await stopServer(server)
  await sql.close()
  const start = began ?? ready
  const epoch = (t: number) => performance.timeOrigin + t
  const stalls = readStalls(lag)
  const split = (xs: ReadonlyArray<{ at: number; start: number; ms: number; ok: boolean }>) => {
    // the server's first second is its warm-up, not its baseline
    const before = xs.filter((x) => x.at >= ready + 1000 && x.at < start - 200 && !(updating && x.at + x.ms >= updating[0] && x.at <= updating[1]))
    const during = xs.filter((x) => x.at >= start - 200)
    return {
      before: stats(
        before.map((x) => x.ms),
        before.filter((x) => !x.ok).length
      ),
      during: stats(
        during.map((x) => x.ms),
        during.filter((x) => !x.ok).length
      ),
      // issue 27: what the slowest requests ran into, before and during the run
      stallsBefore: stallReport(
        before,
        stalls.filter((s) => s.at >= epoch(ready + 1000) && s.at < epoch(start - 200))
      ),
      stallsDuring: stallReport(
        during,
        stalls.filter((s) => s.at >= epoch(start - 200) && s.at <= epoch(ended ?? performance.now()))
      )
    }
  }
  const p = split(plans)
  const c = split(current)
  clearStalls(lag)
  return {
    due,
    dueRows: initial,
    /** from the first row done to the last (polled every 100 ms) */
    seconds: round(((ended ?? performance.now()) - start) / 1000, 2),
    plans: p,
    current: c,
    plansP99Ratio: round(p.during.p99Ms / p.before.p99Ms, 2),
    currentP99Ratio: round(c.during.p99Ms / c.before.p99Ms, 2)
  }
}

// ---- main ------------------------------------------------------------------------------------

const main = async () => {
  console.log(`scale benchmark: SCALE=${SCALE}; sizes ${SIZES.map((s) => `${s.label} ${s.users} users / ${s.peers} peers`).join(", ")}`)
  const pg = startPostgres({
    shared_buffers: "512MB",
    max_wal_size: "8GB",
    checkpoint_timeout: "30min",
    maintenance_work_mem: "256MB",
    work_mem: "16MB"
  })
  const cleanup = () => pg.stop()
  process.on("SIGINT", () => {
    cleanup()
    process.exit(130)
  })
  const appKey = crypto.getRandomValues(new Uint8Array(32))
  const results: Record<string, Record<string, unknown>> = {}
  const table: Record<string, Record<string, Stats>> = {}
  const titles = new Map([...READS, ...OTHERS].map((s) => [s.id, s.title]))
  const envOf = (url: string) => ({
    DATABASE_URL: url,
    APP_KEY: Buffer.from(appKey).toString("base64"),
    PUBLIC_URL: "http://bench.example",
    HOST: "127.0.0.1",
    GENERAL_RATE_LIMIT: "0",
    LOG_LEVEL: "warn",
    ADMIN_REQUIRE_2FA: "false"
  })
  interface Prepared {
    readonly size: Size
    readonly db: string
    readonly url: string
    readonly env: Record<string, string>
    readonly data: ScaleData
  }
  const prepared: Array<Prepared> = []
  try {
    for (const size of SIZES) {
      const db = `scale_${size.label}`
      const admin = new SQL(pg.url, { max: 1 })
      await admin.unsafe(`create database ${db}`)
      await admin.close()
      const url = pg.url.replace(/\/postgres$/, `/${db}`)
      const env = envOf(url)
      console.log(`[${size.label}] migrating`)
      run([BUN, "run", "src/cli.ts", "migrate"], env)
      console.log(`[${size.label}] seeding`)
      const data = await seedScale(url, appKey, size)
      console.log(`[${size.label}] seeded in ${data.seedSeconds.toFixed(1)} s: ${JSON.stringify(data.rows)}`)
      prepared.push({ size, db, url, env, data })
      results[size.label] = { data }
    }

    // both servers at once; each path is measured in rounds that alternate the sizes, so that
    // the machine's other load falls on both alike
    // issue 27: each server notes its event-loop stalls, laid over each path's slowest requests
    const lags = prepared.map((p) => lagFile(p.size.label))
    lags.forEach(clearStalls)
    // and the benchmark notes its own: a pause of the measuring process is not the server's
    const clientLag = lagFile("client")
    clearStalls(clientLag)
    startLoopLag(clientLag)
    const servers = await Promise.all(prepared.map((p, k) => startServer({ ...p.env, LOOP_LAG_FILE: lags[k]! }, { preload: [LOOP_LAG_PRELOAD] })))
    const stallsOf: Record<string, Record<string, StallReport>> = {}
    const reportStalls = async (label: string, id: string, k: number, timed: ReadonlyArray<Timed>) => {
      if (timed.length === 0) return
      await sleep(1100) // the server writes its stalls once a second
      const from = Math.min(...timed.map((t) => t.start))
      const to = Math.max(...timed.map((t) => t.start + t.ms))
      const r = stallReport(timed, readStalls(lags[k]!, from, to), readStalls(clientLag, from, to))
      stallsOf[label] = { ...stallsOf[label], [id]: r }
      console.log(`[${label}]   ${describeStalls(r)}`)
    }
    try {
      for (const s of [...READS, ...OTHERS].filter((s) => !PATHS || PATHS.includes(s.id))) {
        const rounds = 4
        const lat = prepared.map(() => ({
          latencies: [] as Array<number>,
          timed: [] as Array<Timed>,
          errors: 0,
          firstError: undefined as string | undefined,
          bytes: 0
        }))
        for (const [k, p] of prepared.entries()) {
          for (let i = 0; i < (s.warmup ?? 5); i++) await send(servers[k]!.base, s.make(p.data, 100_000 + i))
        }
        // issue 27: the server's resident memory across the path's requests (the full node list)
        const rssBefore = servers.map((srv) => (resetPeak(srv.proc.pid), rssMb(srv.proc.pid)))
        for (let r = 0; r < rounds; r++) {
          for (const [k, p] of prepared.entries()) {
            const n = s.n?.(p.size) ?? SAMPLES
            const from = Math.floor((n * r) / rounds)
            const to = Math.floor((n * (r + 1)) / rounds)
            if (to <= from) continue
            const part = await sample(servers[k]!.base, to - from, s.concurrency ?? 2, (i) => s.make(p.data, from + i))
            const all = lat[k]!
            all.latencies.push(...part.latencies)
            all.timed.push(...part.timed)
            all.errors += part.errors
            all.firstError ??= part.firstError
            all.bytes = part.bytes
          }
        }
        for (const [k, p] of prepared.entries()) {
          const all = lat[k]!
          const m = stats(all.latencies, all.errors, all.firstError, all.bytes)
          ;(table[p.size.label] ??= {})[s.id] = m
          console.log(
            `[${p.size.label}] ${s.title}: median ${m.medianMs} ms, p99 ${m.p99Ms} ms (n ${m.n}${m.errors ? `, ${m.errors} errors: ${m.firstError}` : ""})`
          )
          await reportStalls(p.size.label, s.id, k, all.timed)
          if (s.id === "node-peers") {
            const pid = servers[k]!.proc.pid
            const rss = { beforeMiB: round(rssBefore[k] ?? NaN), afterMiB: round(rssMb(pid) ?? NaN), peakMiB: round(peakRssMb(pid) ?? NaN), bytes: all.bytes }
            ;(results[p.size.label] ??= {})["node-peers-rss"] = rss
            console.log(
              `[${p.size.label}] server RSS over the ${m.n} full lists (${all.bytes} bytes each): ${rss.beforeMiB} -> ${rss.afterMiB} MiB, peak ${rss.peakMiB} MiB`
            )
          }
        }
      }
      // an unchanged incremental poll, when the API gives the peers' revision (the devices work)
      titles.set("node-peers-since", "GET /v1/node/peers?since=<revision> (nothing changed)")
      for (const [k, p] of PATHS && !PATHS.includes("node-peers-since") ? [] : prepared.entries()) {
        const full = await send(servers[k]!.base, { path: "/v1/node/peers", token: nodeToken(1) })
        const revision = full.status === 200 ? (JSON.parse(full.text) as { meta?: { revision?: number | string } }).meta?.revision : undefined
        // the benchmark collects the 10 MB list it just read and parsed before it times the polls:
        // its own collection would pause requests the server answered in time (the server's
        // garbage of that list is left where it is, as after any full list)
        Bun.gc(true)
        if (revision === undefined) {
          console.log(`[${p.size.label}] GET /v1/node/peers answers no meta.revision: ?since= not measured`)
          continue
        }
        const poll = () => ({ path: `/v1/node/peers?since=${revision}`, token: nodeToken(1) })
        // the same 5 warm-up requests as every other path (each pooled connection prepares the
        // poll's statements on its first use)
        for (let i = 0; i < 5; i++) await send(servers[k]!.base, poll())
        const raw = await sample(servers[k]!.base, SAMPLES, 2, poll)
        const m = stats(raw.latencies, raw.errors, raw.firstError, raw.bytes)
        table[p.size.label]!["node-peers-since"] = m
        console.log(`[${p.size.label}] node peers ?since= unchanged: median ${m.medianMs} ms, p99 ${m.p99Ms} ms`)
        await reportStalls(p.size.label, "node-peers-since", k, raw.timed)
      }
    } finally {
      await Promise.all(servers.map(stopServer))
      lags.forEach(clearStalls)
    }
    for (const p of prepared) {
      results[p.size.label]!.paths = table[p.size.label]
      results[p.size.label]!.stalls = stallsOf[p.size.label]
    }

    const large = prepared.find((p) => p.size.label === "large")
    if (large && !PATHS) {
      console.log(`[large] EXPLAIN pass (auto_explain)`)
      const explained = await explainPass(pg.url, large.db, large.env, pg.log, large.data)
      results["large"]!.explain = explained
      console.log(`[large] ${explained.statements} statements explained; sequential scans of big tables: ${explained.seqScans.length}`)
      for (const f of explained.seqScans) console.log(`  Seq Scan on ${f.tables.join(", ")} (${f.ms} ms): ${f.query}`)
    }

    for (const p of PATHS && !process.env.SCALE_JOBS ? [] : prepared) {
      console.log(`[${p.size.label}] jobs run with ${Math.round(p.size.users / 10)} services and invoices due`)
      const jobs = await jobsRun(p.url, p.env, p.data)
      results[p.size.label]!.jobs = jobs
      console.log(
        `[${p.size.label}] jobs: ${jobs.dueRows} due rows done in ${jobs.seconds} s; GET /v1/plans p99 ${jobs.plans.before.p99Ms} -> ${jobs.plans.during.p99Ms} ms (x${jobs.plansP99Ratio}), GET /v1/services/current p99 ${jobs.current.before.p99Ms} -> ${jobs.current.during.p99Ms} ms (x${jobs.currentP99Ratio})`
      )
      for (const [name, x] of [
        ["GET /v1/plans", jobs.plans],
        ["GET /v1/services/current", jobs.current]
      ] as const) {
        console.log(`[${p.size.label}]   ${name} before the run: ${describeStalls(x.stallsBefore)}`)
        console.log(`[${p.size.label}]   ${name} during the run: ${describeStalls(x.stallsDuring)}`)
      }
    }
  } finally {
    cleanup()
  }

  // the table
  const ids = [...new Set(Object.values(table).flatMap((m) => Object.keys(m)))]
  const cell = (s: Stats | undefined) => (s ? `${s.medianMs} / ${s.p99Ms}${s.errors ? ` (${s.errors} err)` : ""}` : "—")
  const lines = [
    `| path | small median / p99 ms | large median / p99 ms | large/small p99 |`,
    `|---|---|---|---|`,
    ...ids.map((id) => {
      const s = table["small"]?.[id]
      const l = table["large"]?.[id]
      const ratio = s && l ? round(l.p99Ms / s.p99Ms, 2) : null
      return `| ${titles.get(id) ?? id} | ${cell(s)} | ${cell(l)} | ${ratio ?? "—"} |`
    })
  ]
  for (const label of ["small", "large"]) {
    const j = results[label]?.jobs as Awaited<ReturnType<typeof jobsRun>> | undefined
    if (j) {
      lines.push(
        `| jobs run (${label}): ${j.dueRows} due rows | ${j.seconds} s | \`GET /v1/plans\` p99 ${j.plans.before.p99Ms} → ${j.plans.during.p99Ms} ms (×${j.plansP99Ratio}) | \`GET /v1/services/current\` p99 ${j.current.before.p99Ms} → ${j.current.during.p99Ms} ms (×${j.currentP99Ratio}) |`
      )
    }
  }
  console.log(`\n${lines.join("\n")}\n`)
  const dir = join(ROOT, "bench/results")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `scale-${new Date().toISOString().replace(/[:.]/g, "-")}.json`)
  writeFileSync(
    file,
    JSON.stringify(
      {
        kind: "scale",
        at: new Date().toISOString(),
        scale: SCALE,
        samples: SAMPLES,
        machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg() },
        postgres: pg.version,
        sizes: SIZES,
        results,
        table: lines
      },
      null,
      2
    )
  )
  console.log(`results: ${file}`)
}

await main()
