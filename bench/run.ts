/**
 * `bun run bench`: our API against the runtime's limit (raw `Bun.serve` + `Bun.SQL`), Hono on Bun,
 * Fastify on Node + `pg`, and a bare Effect HttpApi (the framework's floor), on one throwaway
 * PostgreSQL 15 with one seeded data set, measured with wrk on loopback (issue 8).
 *
 * Knobs (environment): BENCH_SECONDS (5) measured seconds per run, BENCH_WARMUP (3) warm-up
 * seconds per server and scenario, BENCH_ROUNDS (3) interleaved rounds, BENCH_CONNECTIONS (64),
 * BENCH_ONLY (comma-separated scenario ids), BENCH_SKIP_LOGIN=1, BENCH_SKIP_BUILD=1, BENCH_LOG_LEVEL (info:
 * our request log on, as shipped).
 */
import { mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { cpus, loadavg, release } from "node:os"
import { join, resolve } from "node:path"
import { startPostgres, type Postgres } from "./lib/postgres.ts"
import { cpuTicks, freePort, peakRssMb, postgresTicks, resetPeak, rssMb, run, TICK_US } from "./lib/proc.ts"
import { seed, type Seeded } from "./lib/seed.ts"
import { ensureWrk, loginLua, pacedLua, wrk, type WrkResult } from "./lib/wrk.ts"

const ROOT = resolve(import.meta.dir, "..")
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64)
const LOGIN_CONNECTIONS = 16
const PROBE_CONNECTIONS = 8
const PROBE_DELAY_MS = 10
const ONLY = process.env.BENCH_ONLY?.split(",")
  .map((s) => s.trim())
  .filter(Boolean)
const BUN = process.execPath
const NODE = Bun.which("node")
const PUBLIC_URL = "http://bench.example"
const logDir = mkdtempSync("/tmp/vpn-bench-logs.")

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}
const round = (x: number, digits = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : null)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

// ---- servers ---------------------------------------------------------------------------------

type ServerId = "ours" | "raw" | "raw-pg" | "hono" | "fastify" | "effect-bare"

interface ServerDef {
  readonly id: ServerId
  readonly label: string
  readonly cmd: ReadonlyArray<string>
  readonly env?: Record<string, string>
}

/** as shipped: the request log on (LOG_LEVEL info, to the log file), metrics on (issue 27: the targets are "as shipped") */
const OURS_ENV = { GENERAL_RATE_LIMIT: "0", LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? "info" }

const SERVERS: ReadonlyArray<ServerDef> = [
  { id: "raw", label: "raw Bun.serve + Bun.SQL", cmd: [BUN, "bench/peers/raw.ts"] },
  { id: "raw-pg", label: "raw Bun.serve + pg (our driver)", cmd: [BUN, "bench/peers/raw.ts"], env: { PEER_DRIVER: "pg" } },
  { id: "ours", label: "ours (Effect HttpApi)", cmd: [BUN, "run", "src/main.ts"], env: OURS_ENV },
  { id: "effect-bare", label: "bare Effect HttpApi", cmd: [BUN, "bench/peers/effect-bare.ts"] },
  { id: "hono", label: "Hono on Bun + Bun.SQL", cmd: [BUN, "bench/peers/hono.ts"] },
  ...(NODE ? [{ id: "fastify" as const, label: "Fastify on Node + pg", cmd: [NODE, "bench/peers/fastify.mjs"] }] : [])
]

interface Running {
  readonly def: ServerDef
  readonly port: number
  readonly base: string
  readonly proc: Bun.Subprocess
  readonly log: string
  readonly startupMs: number
}

let baseEnv: Record<string, string> = {}
const running = new Set<Running>()

const logTail = (file: string) => {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-30).join("\n")
  } catch {
    return "(no log)"
  }
}

/** Starts a server and waits for its first 200 on /v1/status. */
const start = async (def: ServerDef, extraEnv: Record<string, string> = {}): Promise<Running> => {
  const port = freePort()
  const log = join(logDir, `${def.id}-${port}.log`)
  const t0 = performance.now()
  const proc = Bun.spawn([...def.cmd], {
    cwd: ROOT,
    env: { ...process.env, ...baseEnv, ...def.env, ...extraEnv, PORT: String(port) },
    stdout: Bun.file(log),
    stderr: Bun.file(`${log}.err`)
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = t0 + 60_000
  for (;;) {
    if (proc.exitCode !== null) {
      throw new Error(`${def.label} exited ${proc.exitCode} before answering:\n${logTail(log)}\n${logTail(`${log}.err`)}`)
    }
    try {
      const res = await fetch(`${base}/v1/status`)
      await res.arrayBuffer()
      if (res.status === 200) break
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) {
      proc.kill("SIGKILL")
      throw new Error(`${def.label} not ready within 60 s:\n${logTail(log)}\n${logTail(`${log}.err`)}`)
    }
    await sleep(5)
  }
  const r: Running = { def, port, base, proc, log, startupMs: performance.now() - t0 }
  running.add(r)
  return r
}

const stop = async (r: Running) => {
  running.delete(r)
  r.proc.kill("SIGTERM")
  const exited = await Promise.race([r.proc.exited.then(() => true), sleep(12_000).then(() => false)])
  if (!exited) r.proc.kill("SIGKILL")
}

// ---- scenarios -------------------------------------------------------------------------------

interface Scenario {
  readonly id: string
  readonly title: string
  readonly path: (s: Seeded) => string
  readonly auth: boolean
  readonly servers: ReadonlyArray<ServerId>
}

const ALL: ReadonlyArray<ServerId> = ["raw", "ours", "effect-bare", "raw-pg", "hono", "fastify"]
const NO_BARE: ReadonlyArray<ServerId> = ["raw", "ours", "hono", "fastify"]
const AUTH_WITH_DRIVER: ReadonlyArray<ServerId> = ["raw", "ours", "raw-pg", "hono", "fastify"]

const SCENARIOS: ReadonlyArray<Scenario> = (
  [
    { id: "status", title: "GET /v1/status", path: () => "/v1/status", auth: false, servers: ALL },
    { id: "plans", title: "GET /v1/plans", path: () => "/v1/plans", auth: false, servers: ALL },
    {
      id: "services-current",
      title: "GET /v1/services/current (bearer)",
      path: () => "/v1/services/current",
      auth: true,
      servers: AUTH_WITH_DRIVER
    },
    {
      id: "invoices-page-2",
      title: "GET /v1/invoices?page=2 (bearer, 100 invoices)",
      path: () => "/v1/invoices?page=2",
      auth: true,
      servers: NO_BARE
    },
    {
      id: "wireguard",
      title: "GET /v1/servers/{id}/wireguard (bearer, existing peer)",
      path: (s) => `/v1/servers/${s.serverId}/wireguard`,
      auth: true,
      servers: NO_BARE
    }
  ] satisfies ReadonlyArray<Scenario>
).filter((s: Scenario) => !ONLY || ONLY.includes(s.id))

interface RoundResult extends WrkResult {
  readonly round: number
  readonly cpuUsPerRequest: number
  readonly dbCpuUsPerRequest: number
  readonly peakRssMb: number | null
}

const measure = async (r: Running, url: string, headers: Record<string, string>, roundNo: number): Promise<RoundResult> => {
  const pid = r.proc.pid
  resetPeak(pid)
  const cpu0 = cpuTicks(pid)
  const db0 = postgresTicks()
  const res = await wrk({ url, seconds: SECONDS, connections: CONNECTIONS, headers })
  const cpu = (cpuTicks(pid) - cpu0) * TICK_US
  const db = (postgresTicks() - db0) * TICK_US
  return {
    ...res,
    round: roundNo,
    cpuUsPerRequest: cpu / Math.max(1, res.requests),
    dbCpuUsPerRequest: db / Math.max(1, res.requests),
    peakRssMb: peakRssMb(pid) ?? null
  }
}

/** Canonical JSON (sorted keys) so that peers are compared by content, not key order. */
const canonical = (text: string): string => {
  try {
    const sort = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(sort)
        : v !== null && typeof v === "object"
          ? Object.fromEntries(
              Object.entries(v)
                .sort(([a], [b]) => a.localeCompare(b))
                .map(([k, x]) => [k, sort(x)])
            )
          : v
    return JSON.stringify(sort(JSON.parse(text)))
  } catch {
    return text
  }
}

const firstDifference = (a: string, b: string) => {
  let i = 0
  while (i < a.length && a[i] === b[i]) i++
  return `at ${i}: ours …${a.slice(Math.max(0, i - 40), i + 60)}… / peer …${b.slice(Math.max(0, i - 40), i + 60)}…`
}

// ---- main ------------------------------------------------------------------------------------

const notes: Array<string> = []
const note = (s: string) => {
  notes.push(s)
  console.log(`note: ${s}`)
}

let pg: Postgres | undefined
const cleanup = async () => {
  for (const r of [...running]) await stop(r).catch(() => undefined)
  pg?.stop()
}
process.on("SIGINT", () => void cleanup().then(() => process.exit(130)))
process.on("SIGTERM", () => void cleanup().then(() => process.exit(143)))

const main = async () => {
  process.chdir(ROOT)
  const startedAt = new Date()
  const wall0 = performance.now()
  const loadAtStart = loadavg()
  ensureWrk()
  const wrkVersion = Bun.spawnSync(["wrk", "-v"]).stdout.toString().split("\n")[0]?.trim() ?? "wrk"
  console.log(`bench: ${SECONDS}s x ${ROUNDS} rounds, ${WARMUP}s warm-up, ${CONNECTIONS} connections; ${cpus().length} CPUs`)

  // the compiled binary (size, start-up) before anything is measured
  let binary: { bytes: number; startupMs: number | null; idleRssMb: number | null } | null = null
  if (process.env.BENCH_SKIP_BUILD !== "1") {
    console.log("building dist/vpn-api (npm run build) ...")
    run([BUN, "run", "build"], {})
    binary = { bytes: statSync(join(ROOT, "dist/vpn-api")).size, startupMs: null, idleRssMb: null }
  }

  pg = startPostgres()
  console.log(`PostgreSQL: ${pg.version} at ${pg.url}`)
  const appKey = crypto.getRandomValues(new Uint8Array(32))
  baseEnv = {
    DATABASE_URL: pg.url,
    APP_KEY: Buffer.from(appKey).toString("base64"),
    PUBLIC_URL,
    HOST: "127.0.0.1",
    TOKEN_TTL_DAYS: "30"
  }

  // our server applies the migrations, then the data set goes in with plain SQL
  const ours = SERVERS.find((s) => s.id === "ours")!
  const first = await start(ours)
  const firstStartMs = first.startupMs
  await stop(first)
  const seeded = await seed(pg.url, appKey)
  console.log(`seeded: user ${seeded.userId}, server ${seeded.serverId}, ${seeded.loginUsers} login users`)

  // start-up to first 200 (3 starts each, migrations already applied) and idle RSS
  const startup: Record<string, { startupMs: number; startupRuns: Array<number>; idleRssMb: number | null }> = {}
  const live = new Map<ServerId, Running>()
  for (const def of SERVERS) {
    const runs: Array<number> = []
    let last: Running | undefined
    for (let i = 0; i < 3; i++) {
      if (last) await stop(last)
      last = await start(def)
      runs.push(last.startupMs)
    }
    await fetch(`${last!.base}/v1/plans`).then((r) => r.arrayBuffer())
    await sleep(1500)
    startup[def.id] = { startupMs: median(runs), startupRuns: runs, idleRssMb: rssMb(last!.proc.pid) ?? null }
    live.set(def.id, last!)
    console.log(`${def.label}: ready in ${median(runs).toFixed(0)} ms, idle RSS ${startup[def.id]!.idleRssMb?.toFixed(1)} MB`)
  }
  if (binary) {
    const def: ServerDef = { id: "ours", label: "ours, compiled binary", cmd: [join(ROOT, "dist/vpn-api")], env: OURS_ENV }
    const runs: Array<number> = []
    for (let i = 0; i < 3; i++) {
      const r = await start(def)
      runs.push(r.startupMs)
      if (i === 2) {
        await fetch(`${r.base}/v1/plans`).then((x) => x.arrayBuffer())
        await sleep(1500)
        binary.idleRssMb = rssMb(r.proc.pid) ?? null
      }
      await stop(r)
    }
    binary.startupMs = median(runs)
    console.log(
      `compiled binary: ${(binary.bytes / 1048576).toFixed(1)} MB, ready in ${binary.startupMs.toFixed(0)} ms, idle RSS ${binary.idleRssMb?.toFixed(1)} MB`
    )
  }

  // same answers everywhere before anything is timed
  const authHeaders = { authorization: `Bearer ${seeded.token}` }
  const served = new Map<string, Set<ServerId>>()
  const checks: Array<{ scenario: string; server: ServerId; status: number; sameAsOurs: boolean | null; detail?: string }> = []
  for (const sc of SCENARIOS) {
    const ok = new Set<ServerId>()
    const bodies = new Map<ServerId, { status: number; text: string }>()
    for (const id of sc.servers) {
      const r = live.get(id)
      if (!r) continue
      const res = await fetch(`${r.base}${sc.path(seeded)}`, { headers: sc.auth ? authHeaders : {} })
      bodies.set(id, { status: res.status, text: await res.text() })
    }
    const mine = bodies.get("ours")
    for (const [id, b] of bodies) {
      let same: boolean | null = null
      let detail: string | undefined
      if (mine && mine.status === 200 && id !== "ours") {
        same = canonical(mine.text) === canonical(b.text)
        if (!same) detail = firstDifference(canonical(mine.text), canonical(b.text))
      }
      checks.push({ scenario: sc.id, server: id, status: b.status, sameAsOurs: same, ...(detail ? { detail } : {}) })
      if (b.status === 200) ok.add(id)
      else note(`${sc.id}: ${id} answered ${b.status} (${b.text.slice(0, 120)}); not measured`)
      if (same === false) note(`${sc.id}: ${id} differs from ours ${detail}`)
    }
    served.set(sc.id, ok)
  }

  // reads: interleaved rounds, one server loaded at a time
  note(
    `GENERAL_RATE_LIMIT=0 for our server in the read scenarios (the peers have no limit either); ` +
      `all servers stay started side by side, only one is loaded at a time`
  )
  const scenarioResults: Array<Record<string, unknown>> = []
  for (const sc of SCENARIOS) {
    const order = sc.servers.filter((id) => served.get(sc.id)!.has(id))
    const rounds = new Map<ServerId, Array<RoundResult>>(order.map((id) => [id, []]))
    console.log(`\n== ${sc.title}`)
    for (let roundNo = 1; roundNo <= ROUNDS; roundNo++) {
      const rotated = order.map((_, i) => order[(i + roundNo - 1) % order.length]!)
      for (const id of rotated) {
        const r = live.get(id)!
        const url = `${r.base}${sc.path(seeded)}`
        const headers = sc.auth ? authHeaders : {}
        if (roundNo === 1 && WARMUP > 0) await wrk({ url, seconds: WARMUP, connections: CONNECTIONS, headers })
        const res = await measure(r, url, headers, roundNo)
        rounds.get(id)!.push(res)
        const bad = res.errors.status + res.errors.timeout + res.errors.connect + res.errors.read + res.errors.write
        console.log(
          `  round ${roundNo} ${id.padEnd(12)} ${res.rps.toFixed(0).padStart(7)} req/s  p50 ${res.p50Ms.toFixed(2)} ms  p99 ${res.p99Ms.toFixed(
            2
          )} ms${bad ? `  ERRORS ${JSON.stringify(res.errors)}` : ""}`
        )
      }
    }
    const rawRounds = rounds.get("raw")
    const floorRounds = rounds.get("effect-bare")
    const fastifyRounds = rounds.get("fastify")
    const perServer: Record<string, unknown> = {}
    for (const [id, rs] of rounds) {
      const ratiosTo = (base: Array<RoundResult> | undefined) => (base ? rs.map((x) => x.rps / (base.find((y) => y.round === x.round)?.rps ?? NaN)) : [])
      const ratios = ratiosTo(rawRounds)
      const floorRatios = ratiosTo(floorRounds)
      perServer[id] = {
        label: SERVERS.find((s) => s.id === id)!.label,
        rps: round(median(rs.map((x) => x.rps)), 0),
        ratioToRaw: round(median(ratios)),
        // issue 40: the spread of the interleaved rounds, and the same against Fastify + pg
        ratioToRawSpread: ratios.length > 0 ? [round(Math.min(...ratios)), round(Math.max(...ratios))] : null,
        ratioToFastify: fastifyRounds ? round(median(ratiosTo(fastifyRounds))) : null,
        ratioToFastifySpread: fastifyRounds ? [round(Math.min(...ratiosTo(fastifyRounds))), round(Math.max(...ratiosTo(fastifyRounds)))] : null,
        // the framework's floor (a bare Effect HttpApi serving the same route), where it serves it
        ratioToFloor: floorRounds ? round(median(floorRatios)) : null,
        p50Ms: round(median(rs.map((x) => x.p50Ms))),
        p99Ms: round(median(rs.map((x) => x.p99Ms))),
        cpuUsPerRequest: round(median(rs.map((x) => x.cpuUsPerRequest)), 1),
        dbCpuUsPerRequest: round(median(rs.map((x) => x.dbCpuUsPerRequest)), 1),
        peakRssMb: round(Math.max(...rs.map((x) => x.peakRssMb ?? 0)), 1),
        errors: rs.reduce((n, x) => n + x.errors.status + x.errors.timeout + x.errors.connect + x.errors.read + x.errors.write, 0),
        rounds: rs
      }
    }
    scenarioResults.push({ id: sc.id, title: sc.title, connections: CONNECTIONS, servers: perServer })
  }

  // login: argon2id bound; our pool size against Bun.password.verify alone, and plans during a flood
  let login: Record<string, unknown> | null = null
  for (const id of ["ours", "effect-bare", "raw-pg", "hono", "fastify"] as const) {
    const r = live.get(id)
    if (r) await stop(r)
    live.delete(id)
  }
  if (process.env.BENCH_SKIP_LOGIN !== "1" && (!ONLY || ONLY.includes("login"))) {
    login = await loginPhase(seeded, live.get("raw"))
  }

  const result = {
    startedAt: startedAt.toISOString(),
    wallSeconds: round((performance.now() - wall0) / 1000, 0),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model,
      kernel: release(),
      // the machine may be shared: 1/5/15-minute load averages when the run started and ended
      loadAverage: { start: loadAtStart.map((x) => round(x)), end: loadavg().map((x) => round(x)) },
      bun: Bun.version,
      node: NODE ? run([NODE, "--version"]).trim() : null,
      postgres: pg.version,
      wrk: wrkVersion
    },
    settings: {
      seconds: SECONDS,
      warmupSeconds: WARMUP,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      loginConnections: LOGIN_CONNECTIONS,
      probe: { connections: PROBE_CONNECTIONS, delayMs: PROBE_DELAY_MS },
      oursEnv: OURS_ENV
    },
    notes,
    firstStartWithMigrationsMs: round(firstStartMs, 0),
    startup: Object.fromEntries(
      Object.entries(startup).map(([k, v]) => [
        k,
        {
          startupMs: round(v.startupMs, 0),
          startupRuns: v.startupRuns.map((x) => round(x, 0)),
          idleRssMb: round(v.idleRssMb ?? NaN, 1)
        }
      ])
    ),
    binary: binary && {
      bytes: binary.bytes,
      mb: round(binary.bytes / 1048576, 1),
      startupMs: round(binary.startupMs ?? NaN, 0),
      idleRssMb: round(binary.idleRssMb ?? NaN, 1)
    },
    checks,
    scenarios: scenarioResults,
    login
  }

  await cleanup()
  const dir = join(ROOT, "bench/results")
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`)
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
  console.log(`\n${report(result)}`)
  console.log(`results: ${file} (${result.wallSeconds} s)`)
}

// ---- login phase -----------------------------------------------------------------------------

let loginOffset = 0
const loginRun = async (base: string, seconds: number, seeded: Seeded) => {
  const res = await wrk({
    url: base,
    seconds,
    connections: LOGIN_CONNECTIONS,
    lua: loginLua,
    args: [String(loginOffset), String(seeded.loginUsers), seeded.loginPassword]
  })
  loginOffset += res.requests + LOGIN_CONNECTIONS + 50
  return res
}

const verifyAlone = async (pool: number, seeded: Seeded) => {
  const out = run([BUN, "bench/hash-alone.ts", String(pool), String(SECONDS), seeded.passwordHash, seeded.loginPassword])
  return JSON.parse(out.trim().split("\n").pop()!) as { pool: number; perSecond: number }
}

const probe = (base: string) => wrk({ url: `${base}/v1/plans`, seconds: SECONDS, connections: PROBE_CONNECTIONS, lua: pacedLua(PROBE_DELAY_MS) })

const loginPhase = async (seeded: Seeded, raw: Running | undefined) => {
  console.log(`\n== POST /v1/auth/login (argon2id)`)
  note(
    `login: the spec limits it to 5 a minute per address and per e-mail; our server runs with TRUST_PROXY=true and ` +
      `a wrk Lua script gives every request a fresh X-Forwarded-For and rotates over ${seeded.loginUsers} seeded ` +
      `users (no e-mail used twice in a run), so every request is a real login that passes the shared limiter`
  )
  const ours = SERVERS.find((s) => s.id === "ours")!
  const pools: Array<Record<string, unknown>> = []
  for (const pool of [1, 2]) {
    const r = await start(ours, { TRUST_PROXY: "true", HASH_CONCURRENCY: String(pool) })
    try {
      const check = await fetch(`${r.base}/v1/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "192.0.2.1" },
        body: JSON.stringify({ email: "bench@bench.example", password: seeded.loginPassword })
      })
      const text = await check.text()
      if (check.status !== 200) {
        note(`login: ours answered ${check.status} (${text.slice(0, 120)}); login not measured`)
        return { served: false }
      }
      await loginRun(r.base, Math.max(1, WARMUP), seeded)
      const alone: Array<number> = []
      const logins: Array<WrkResult & { cpuUsPerRequest: number }> = []
      for (let i = 0; i < ROUNDS; i++) {
        alone.push((await verifyAlone(pool, seeded)).perSecond)
        const cpu0 = cpuTicks(r.proc.pid)
        const res = await loginRun(r.base, SECONDS, seeded)
        logins.push({ ...res, cpuUsPerRequest: ((cpuTicks(r.proc.pid) - cpu0) * TICK_US) / Math.max(1, res.requests) })
        console.log(
          `  pool ${pool} round ${i + 1}: verify alone ${alone.at(-1)!.toFixed(1)}/s, login ${res.rps.toFixed(1)}/s (p99 ${res.p99Ms.toFixed(
            0
          )} ms)${res.errors.status ? `  NON-2XX ${res.errors.status}` : ""}`
        )
      }
      const idle = await probe(r.base)
      const [flood, during] = await Promise.all([loginRun(r.base, SECONDS, seeded), probe(r.base)])
      console.log(
        `  pool ${pool}: plans p99 idle ${idle.p99Ms.toFixed(2)} ms, during a login flood ${during.p99Ms.toFixed(2)} ms ` +
          `(flood ${flood.rps.toFixed(1)} logins/s)`
      )
      const loginRps = median(logins.map((x) => x.rps))
      const verifyRps = median(alone)
      pools.push({
        pool,
        verifyAlonePerSecond: round(verifyRps, 1),
        loginPerSecond: round(loginRps, 1),
        ratio: round(loginRps / verifyRps),
        loginP50Ms: round(median(logins.map((x) => x.p50Ms)), 1),
        loginP99Ms: round(median(logins.map((x) => x.p99Ms)), 1),
        cpuUsPerLogin: round(median(logins.map((x) => x.cpuUsPerRequest)), 0),
        non2xx: logins.reduce((n, x) => n + x.errors.status, 0),
        plansProbeIdleP99Ms: round(idle.p99Ms),
        plansProbeFloodP99Ms: round(during.p99Ms),
        plansProbeRatio: round(during.p99Ms / idle.p99Ms),
        floodLoginsPerSecond: round(flood.rps, 1),
        rounds: { alone, logins }
      })
    } finally {
      await stop(r)
    }
  }
  let rawLogin: Record<string, unknown> | null = null
  if (raw) {
    await loginRun(raw.base, Math.max(1, WARMUP), seeded)
    const res = await loginRun(raw.base, SECONDS, seeded)
    rawLogin = { loginPerSecond: round(res.rps, 1), p50Ms: round(res.p50Ms, 1), p99Ms: round(res.p99Ms, 1), non2xx: res.errors.status }
    console.log(`  raw Bun.serve login (no limiter, unbounded Bun.password.verify): ${res.rps.toFixed(1)}/s`)
  }
  return {
    served: true,
    connections: LOGIN_CONNECTIONS,
    probe: `GET /v1/plans, ${PROBE_CONNECTIONS} connections each waiting ${PROBE_DELAY_MS} ms between requests`,
    pools,
    raw: rawLogin
  }
}

// ---- the printed table -----------------------------------------------------------------------

const fmt = (x: unknown, digits = 0) => (typeof x === "number" ? x.toFixed(digits) : "–")

const report = (r: {
  scenarios: Array<Record<string, unknown>>
  startup: Record<string, { startupMs: number | null; idleRssMb: number | null }>
  binary: { mb: number | null; startupMs: number | null; idleRssMb: number | null } | null
  login: Record<string, unknown> | null
  notes: Array<string>
  settings: { seconds: number; rounds: number; connections: number }
}) => {
  const lines: Array<string> = []
  const spread = (range: unknown) => (Array.isArray(range) ? ` [${fmt(range[0], 2)}–${fmt(range[1], 2)}]` : "")
  lines.push(
    `Reads: ${r.settings.connections} connections, median of ${r.settings.rounds} interleaved ${r.settings.seconds}-second runs; ` +
      `×raw = req/s over raw Bun.serve + Bun.SQL in the same round, ×floor = over the bare Effect HttpApi (where it serves ` +
      `the route), ×fastify = over Fastify + pg; [min–max] of the rounds; CPU and DB CPU are µs per request.`,
    "",
    "| scenario | server | req/s | ×raw [spread] | ×floor | ×fastify [spread] | p50 ms | p99 ms | CPU µs/req | DB CPU µs/req | peak RSS MB |",
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  )
  for (const sc of r.scenarios) {
    const servers = sc["servers"] as Record<string, Record<string, unknown>>
    for (const [id, s] of Object.entries(servers)) {
      lines.push(
        `| ${sc["title"]} | ${id} | ${fmt(s["rps"])} | ${fmt(s["ratioToRaw"], 2)}${spread(s["ratioToRawSpread"])} | ${fmt(s["ratioToFloor"], 2)} | ${fmt(s["ratioToFastify"], 2)}${spread(s["ratioToFastifySpread"])} | ${fmt(s["p50Ms"], 2)} | ${fmt(s["p99Ms"], 2)} | ${fmt(
          s["cpuUsPerRequest"]
        )} | ${fmt(s["dbCpuUsPerRequest"])} | ${fmt(s["peakRssMb"])} |${(s["errors"] as number) > 0 ? ` ⚠ ${s["errors"]} errors` : ""}`
      )
    }
  }
  lines.push("", "| server | ready (first 200) ms | idle RSS MB |", "|---|---:|---:|")
  for (const [id, s] of Object.entries(r.startup)) lines.push(`| ${id} | ${fmt(s.startupMs)} | ${fmt(s.idleRssMb, 1)} |`)
  if (r.binary) {
    lines.push(`| ours, compiled binary (${fmt(r.binary.mb, 1)} MB) | ${fmt(r.binary.startupMs)} | ${fmt(r.binary.idleRssMb, 1)} |`)
  }
  const login = r.login
  if (login && login["served"]) {
    lines.push(
      "",
      `Login (${login["connections"]} connections; probe: ${login["probe"]}):`,
      "",
      "| HASH_CONCURRENCY | verify alone /s | our login /s | ratio | login p99 ms | plans p99 idle ms | plans p99 in flood ms | ×idle |",
      "|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    for (const p of login["pools"] as Array<Record<string, unknown>>) {
      lines.push(
        `| ${p["pool"]} | ${fmt(p["verifyAlonePerSecond"], 1)} | ${fmt(p["loginPerSecond"], 1)} | ${fmt(p["ratio"], 2)} | ${fmt(
          p["loginP99Ms"]
        )} | ${fmt(p["plansProbeIdleP99Ms"], 2)} | ${fmt(p["plansProbeFloodP99Ms"], 2)} | ${fmt(p["plansProbeRatio"], 2)} |`
      )
    }
    const raw = login["raw"] as Record<string, unknown> | null
    if (raw) lines.push("", `raw Bun.serve login (no limiter, unbounded hashing): ${fmt(raw["loginPerSecond"], 1)}/s`)
  }
  if (r.notes.length > 0) lines.push("", ...r.notes.map((n) => `- ${n}`))
  return lines.join("\n")
}

await main().catch(async (e) => {
  console.error(e)
  await cleanup()
  process.exit(1)
})
