/**
 * `npm run bench:soak` (issue 27): two API instances on one PostgreSQL under mixed traffic for a
 * while; prints whether any answer was a 5xx, the p99 of the first and of the last minute (and
 * their ratio), and each instance's RSS after the first minute and at the end (and their ratio).
 *
 * The traffic (open loop, paced, every request to 127.0.0.1 only, at most SOAK_MAX_INFLIGHT in
 * flight: an action due while the cap is reached is counted as shed, never queued without bound):
 *  - the README tour: register, plans, cycles, order with WELCOME10, the signed payment webhook,
 *    services/current, the invoice, servers, a WireGuard download (a new user each time);
 *  - reads of users the tour made (services/current, invoices, servers, the config again);
 *  - node polls as the node agent makes them (`GET /v1/node/peers`: the full list once, then
 *    `?since=<revision>`, [D92]) and counters reports (`POST /v1/node/counters`, rising totals
 *    for the peers the polls saw, an Idempotency-Key each);
 *  - logins (seeded users, one shared argon2id hash), status and plans.
 * The rate: SOAK_RATE actions/s, or by default half the capacity measured first (a closed loop
 * of the same mix, 16 workers, SOAK_CAPACITY_SECONDS).
 *
 * Knobs: SOAK_SECONDS (600), SOAK_RATE, SOAK_CAPACITY_SECONDS (10), SOAK_MAX_INFLIGHT (64),
 * SOAK_WINDOW (60: the "first/last minute", shrunk to a third of SOAK_SECONDS for short runs).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { createHmac } from "node:crypto"
import { SQL } from "bun"
import { ARGON2ID } from "../../src/accounts/Passwords.ts"
import { startPostgres } from "../lib/postgres.ts"
import { type Server as Instance, startServer as startInstance, stopServer as stopInstance } from "../lib/server.ts"
import { rssMb, run } from "../lib/proc.ts"

const ROOT = resolve(import.meta.dir, "../..")
const BUN = process.execPath
const SECONDS = Number(process.env.SOAK_SECONDS ?? 600)
const CAPACITY_SECONDS = Number(process.env.SOAK_CAPACITY_SECONDS ?? 10)
const MAX_INFLIGHT = Number(process.env.SOAK_MAX_INFLIGHT ?? 64)
const WINDOW = Math.max(5, Math.min(Number(process.env.SOAK_WINDOW ?? 60), Math.floor(SECONDS / 3)))
const WEBHOOK_SECRET = "soak-webhook-secret"
const LOGIN_PASSWORD = "soak-Password-2026"
const LOGIN_USERS = 2_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const round = (x: number, d = 2) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : null)
const p99 = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.ceil(0.99 * s.length) - 1)]!
}

// ---- instances -------------------------------------------------------------------------------

// ---- requests --------------------------------------------------------------------------------

interface Sample {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly kind: string
}

let samples: Array<Sample> = []

const HEAP_PROBE = "bench/lib/heap-probe.ts"
interface ProbeLine {
  readonly at: number
  readonly fullGc?: boolean
  readonly rssMb: number
  readonly heapMb?: number
  readonly heapMinMb?: number
  readonly heapMaxMb?: number
}
const probeLines = (file: string): Array<ProbeLine> =>
  existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as ProbeLine)
    : []
let ipCounter = 0
const nextIp = () => {
  const i = ipCounter++
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`
}

interface Req {
  readonly kind: string
  readonly path: string
  readonly method?: string
  readonly token?: string
  readonly body?: string
  readonly headers?: Record<string, string>
}

const send = async (base: string, r: Req): Promise<{ status: number; text: string }> => {
  const headers: Record<string, string> = { accept: "application/json", "x-forwarded-for": nextIp(), ...r.headers }
  if (r.token) headers.authorization = `Bearer ${r.token}`
  if (r.body !== undefined) headers["content-type"] = "application/json"
  const t = performance.now()
  let status = 599
  let text = ""
  try {
    const res = await fetch(base + r.path, { method: r.method ?? "GET", headers, ...(r.body !== undefined ? { body: r.body } : {}) })
    text = await res.text()
    status = res.status
  } catch (e) {
    text = String(e)
  }
  samples.push({ at: t, ms: performance.now() - t, status, kind: r.kind })
  return { status, text }
}

const dataOf = <A>(text: string): A | undefined => {
  try {
    return (JSON.parse(text) as { data?: A }).data
  } catch {
    return undefined
  }
}

// ---- the mix ---------------------------------------------------------------------------------

interface TourUser {
  readonly token: string
  readonly invoice: string
  readonly server: number
}

interface Node {
  readonly token: string
  keys: ReadonlyArray<string>
  totals: number
  /** the last `meta.revision` it was answered ([D92]): its next poll asks what changed since */
  revision?: string | undefined
}

interface World {
  readonly instances: ReadonlyArray<Instance>
  readonly nodes: ReadonlyArray<Node>
  readonly users: Array<TourUser>
  tours: number
  logins: number
}

const pick = <A>(xs: ReadonlyArray<A>) => xs[Math.floor(Math.random() * xs.length)]!

const tour = async (base: string, w: World) => {
  const n = w.tours++
  const email = `soak-${Date.now()}-${n}-${Math.floor(Math.random() * 1e6)}@soak.example`
  const password = "soak-Tour-Passw0rd-2026"
  const reg = await send(base, {
    kind: "tour",
    path: "/v1/auth/register",
    method: "POST",
    body: JSON.stringify({ name: "Soak User", email, password, password_confirmation: password })
  })
  const token = dataOf<{ token: string }>(reg.text)?.token
  if (!token) return
  const plans = dataOf<Array<{ id: number }>>((await send(base, { kind: "tour", path: "/v1/plans" })).text)
  const plan = plans?.[0]?.id
  if (plan === undefined) return
  const cycle = dataOf<Array<{ id: number }>>((await send(base, { kind: "tour", path: `/v1/plans/${plan}/cycles` })).text)?.[0]?.id
  if (cycle === undefined) return
  const order = await send(base, {
    kind: "tour",
    path: "/v1/orders",
    method: "POST",
    token,
    body: JSON.stringify({ plan_id: plan, cycle_id: cycle, promo_code: "WELCOME10" })
  })
  const invoice = dataOf<{ uuid: string }>(order.text)?.uuid
  if (!invoice) return
  const body = JSON.stringify({ invoice_uuid: invoice, status: "paid", transaction_id: `tx-soak-${invoice}` })
  const t = Math.floor(Date.now() / 1000)
  const signature = `t=${t},v1=${createHmac("sha256", WEBHOOK_SECRET).update(`${t}.${body}`).digest("hex")}`
  await send(base, { kind: "tour", path: "/v1/webhooks/payments/manual", method: "POST", body, headers: { "x-signature": signature } })
  await send(base, { kind: "tour", path: "/v1/services/current", token })
  await send(base, { kind: "tour", path: `/v1/invoices/${invoice}`, token })
  const servers = dataOf<Array<{ id: number; protocol: string }>>((await send(base, { kind: "tour", path: "/v1/servers", token })).text)
  const server = servers?.find((s) => s.protocol === "wireguard")?.id
  if (server === undefined) return
  await send(base, { kind: "tour", path: `/v1/servers/${server}/wireguard`, token })
  w.users.push({ token, invoice, server })
  if (w.users.length > 500) w.users.shift()
}

const userRead = async (base: string, w: World) => {
  if (w.users.length === 0) return send(base, { kind: "read", path: "/v1/plans" })
  const u = pick(w.users)
  const paths = ["/v1/services/current", `/v1/invoices/${u.invoice}`, "/v1/invoices", "/v1/servers", `/v1/servers/${u.server}/wireguard`, "/v1/user"]
  return send(base, { kind: "read", path: pick(paths), token: u.token })
}

/**
 * A node's poll as the node agent makes it ([D92], src/node/Agent.ts): the full list first, then
 * `?since=<revision>` (the full list again after a 422); the keys it reports on follow the answers.
 */
const nodePoll = async (base: string, w: World, which?: Node) => {
  const node = which ?? pick(w.nodes)
  const since = node.revision === undefined ? "" : `?since=${node.revision}`
  const r = await send(base, { kind: since ? "node-poll" : "node-list", path: `/v1/node/peers${since}`, token: node.token })
  if (r.status === 422) node.revision = undefined
  if (r.status !== 200) return
  let body: { data?: Array<{ public_key?: string; removed?: boolean }>; meta?: { revision?: number | string } }
  try {
    body = JSON.parse(r.text)
  } catch {
    return
  }
  const peers = body.data ?? []
  if (body.meta?.revision !== undefined) node.revision = String(body.meta.revision)
  const gone = new Set(peers.flatMap((p) => (p.removed && p.public_key ? [p.public_key] : [])))
  const seen = peers.flatMap((p) => (!p.removed && p.public_key ? [p.public_key] : []))
  node.keys = since ? [...new Set([...node.keys.filter((k) => !gone.has(k)), ...seen])].slice(-200) : seen.slice(0, 200)
}

const nodeReport = async (base: string, w: World) => {
  const node = pick(w.nodes)
  if (node.keys.length === 0) return nodePoll(base, w)
  node.totals += 1_000_000
  const body = JSON.stringify(node.keys.map((k) => ({ public_key: k, rx_total: node.totals, tx_total: node.totals / 2 })))
  return send(base, {
    kind: "node-report",
    path: "/v1/node/counters",
    method: "POST",
    token: node.token,
    body,
    headers: { "idempotency-key": `soak-${crypto.randomUUID()}` }
  })
}

const login = (base: string, w: World) =>
  send(base, {
    kind: "login",
    path: "/v1/auth/login",
    method: "POST",
    body: JSON.stringify({ email: `soak-login-${w.logins++ % LOGIN_USERS}@soak.example`, password: LOGIN_PASSWORD })
  })

/** one action of the mix; weights per 100 */
const action = (w: World): ((base: string, w: World) => Promise<unknown>) => {
  const x = Math.random() * 100
  if (x < 3) return tour
  if (x < 8) return login
  if (x < 20) return (base) => nodePoll(base, w)
  if (x < 26) return nodeReport
  if (x < 66) return userRead
  if (x < 83) return (base) => send(base, { kind: "status", path: "/v1/status" })
  return (base) => send(base, { kind: "plans", path: "/v1/plans" })
}

// ---- main ------------------------------------------------------------------------------------

const uptime = () => run(["uptime"]).trim()

const main = async () => {
  console.log(`soak: ${SECONDS} s, window ${WINDOW} s; ${uptime()}`)
  const pg = startPostgres({ max_connections: "200" })
  const cleanup: Array<() => Promise<void> | void> = [() => pg.stop()]
  process.on("SIGINT", async () => {
    for (const f of cleanup.reverse()) await f()
    process.exit(130)
  })
  try {
    const env = {
      DATABASE_URL: pg.url,
      APP_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
      PUBLIC_URL: "http://soak.example",
      HOST: "127.0.0.1",
      TRUST_PROXY: "true",
      GENERAL_RATE_LIMIT: "0",
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
      ADMIN_REQUIRE_2FA: "false"
    }
    run([BUN, "run", "src/cli.ts", "migrate"], env)
    const seeded = run([BUN, "run", "src/cli.ts", "seed-demo"], env)
    const nodeTokens = [...seeded.matchAll(/node token of .*\(shown once\): (\S+)/g)].map((m) => m[1]!)
    const sql = new SQL(pg.url, { max: 1 })
    const hash = await Bun.password.hash(LOGIN_PASSWORD, ARGON2ID)
    await sql`
      insert into users (name, email, password_hash, email_verified_at)
      select 'Soak ' || n, 'soak-login-' || n || '@soak.example', ${hash}, now() from generate_series(0, ${LOGIN_USERS - 1}) as n`
    await sql.close()

    // issue 27: each instance's heap, traced by bench/lib/heap-probe.ts (a leak or a high-water mark)
    const probeDir = mkdtempSync(join(tmpdir(), "soak-heap-"))
    const probes = [0, 1].map((i) => join(probeDir, `instance-${i}.jsonl`))
    const instances = await Promise.all(probes.map((f) => startInstance({ ...env, HEAP_PROBE_FILE: f }, { preload: [HEAP_PROBE] })))
    cleanup.push(() => Promise.all(instances.map(stopInstance)).then(() => undefined))
    const pids = instances.map((i) => i.proc.pid)
    /** a full collection in each instance (SIGUSR2 to the probe), then its live heap and RSS */
    const fullGc = async (): Promise<Array<ProbeLine | undefined>> => {
      const since = Date.now()
      for (const i of instances) i.proc.kill("SIGUSR2")
      await sleep(1500)
      return probes.map((f) => probeLines(f).find((l) => l.fullGc === true && l.at >= since))
    }
    const world: World = { instances, nodes: nodeTokens.map((token) => ({ token, keys: [], totals: 0 })), users: [], tours: 0, logins: 0 }
    // a few tours so that reads and node reports have something to work on
    for (let i = 0; i < 4; i++) await tour(instances[i % 2]!.base, world)
    for (const n of world.nodes) await nodePoll(instances[0]!.base, world, n)

    // capacity: a closed loop of the mix
    let rate = Number(process.env.SOAK_RATE ?? NaN)
    let capacity: number | null = null
    if (!Number.isFinite(rate)) {
      samples = []
      const until = performance.now() + CAPACITY_SECONDS * 1000
      let k = 0
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (performance.now() < until) await action(world)(instances[k++ % 2]!.base, world)
        })
      )
      capacity = samples.length / CAPACITY_SECONDS
      const perAction = samples.length / Math.max(1, k)
      rate = Math.max(1, capacity / 2 / perAction)
      console.log(
        `capacity (closed loop, 16 workers, ${CAPACITY_SECONDS} s): ${round(capacity, 0)} req/s; soak at ${round(rate, 1)} actions/s (≈ ${round(rate * perAction, 0)} req/s)`
      )
    }

    // the soak
    samples = []
    let inflight = 0
    let shed = 0
    let started = 0
    const t0 = performance.now()
    const wallT0 = Date.now()
    const end = t0 + SECONDS * 1000
    let gcFirst: Array<ProbeLine | undefined> = []
    let rssFirst: Array<number | undefined> = []
    let firstTaken = false
    // issue 27: each instance's RSS at the end of every window, so that a leak (a steady climb)
    // can be told from the collector's high-water mark (a plateau)
    const rssTrace: Array<Array<number | null>> = []
    let k = 0
    while (performance.now() < end) {
      const now = performance.now()
      const due = Math.floor(((now - t0) / 1000) * rate)
      while (started < due) {
        started++
        if (inflight >= MAX_INFLIGHT) {
          shed++
          continue
        }
        inflight++
        void action(world)(instances[k++ % 2]!.base, world).finally(() => inflight--)
      }
      if (!firstTaken && now - t0 >= WINDOW * 1000) {
        firstTaken = true
        rssFirst = pids.map(rssMb)
        console.log(`after ${WINDOW} s: RSS ${rssFirst.map((r) => `${round(r ?? NaN, 1)} MiB`).join(", ")}; ${samples.length} requests`)
        // the live heap once: a full collection at the start of the second window (never in the
        // first or the last window, whose p99s are compared)
        if (SECONDS >= 3 * WINDOW) {
          void fullGc().then((lines) => {
            gcFirst = lines
            console.log(
              `  live heap after a full collection at ${WINDOW} s: ${lines.map((l) => `${l?.heapMb ?? "?"} MiB (RSS ${l?.rssMb ?? "?"})`).join(" / ")}`
            )
          })
        }
      }
      if (now - t0 >= (rssTrace.length + 1) * WINDOW * 1000) {
        rssTrace.push(pids.map((pid) => round(rssMb(pid) ?? NaN, 1)))
        console.log(`  RSS at ${rssTrace.length * WINDOW} s: ${rssTrace.at(-1)!.join(" / ")} MiB`)
      }
      await sleep(5)
    }
    while (inflight > 0) await sleep(10)
    const rssEnd = pids.map(rssMb)
    const gcEnd = await fullGc()
    // per window: the smallest heap the probe saw (≈ live after a collection) and the largest
    const heapTrace = probes.map((f) => {
      const lines = probeLines(f).filter((l) => l.fullGc !== true)
      const windows: Array<{ heapMinMb: number; heapMaxMb: number }> = []
      for (let w = 0; w * WINDOW < SECONDS; w++) {
        const from = wallT0 + w * WINDOW * 1000
        const xs = lines.filter((l) => l.at >= from && l.at < from + WINDOW * 1000)
        if (xs.length === 0) continue
        windows.push({ heapMinMb: Math.min(...xs.map((l) => l.heapMinMb!)), heapMaxMb: Math.max(...xs.map((l) => l.heapMaxMb!)) })
      }
      return windows
    })

    const inWindow = (from: number, to: number) => samples.filter((s) => s.at >= from && s.at < to)
    const first = inWindow(t0, t0 + WINDOW * 1000)
    const last = inWindow(end - WINDOW * 1000, end)
    const fiveXx = samples.filter((s) => s.status >= 500)
    const byStatus: Record<string, number> = {}
    for (const s of samples) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1
    const byKind: Record<string, { n: number; p99Ms: number | null }> = {}
    for (const kind of new Set(samples.map((s) => s.kind))) {
      const xs = samples.filter((s) => s.kind === kind)
      byKind[kind] = { n: xs.length, p99Ms: round(p99(xs.map((s) => s.ms))) }
    }
    // each kind's p99 in the first and in the last window: which requests grew, if any did
    const kindsFirstLast: Record<string, { firstMs: number | null; lastMs: number | null }> = {}
    for (const kind of new Set(samples.map((s) => s.kind))) {
      kindsFirstLast[kind] = {
        firstMs: round(p99(first.filter((s) => s.kind === kind).map((s) => s.ms))),
        lastMs: round(p99(last.filter((s) => s.kind === kind).map((s) => s.ms)))
      }
    }
    const p99First = p99(first.map((s) => s.ms))
    const p99Last = p99(last.map((s) => s.ms))
    // the same without the requests that wait for argon2id (logins, the tour's registration steps)
    const hashless = (xs: ReadonlyArray<Sample>) => xs.filter((s) => s.kind !== "login" && s.kind !== "tour").map((s) => s.ms)
    const p99FirstNoHash = p99(hashless(first))
    const p99LastNoHash = p99(hashless(last))
    const rssRatios = pids.map((_, i) => rssEnd[i]! / rssFirst[i]!)
    const result = {
      seconds: SECONDS,
      window: WINDOW,
      capacityReqPerSec: capacity === null ? null : round(capacity, 0),
      rateActionsPerSec: round(rate, 1),
      requests: samples.length,
      reqPerSec: round(samples.length / SECONDS, 1),
      shedActions: shed,
      tours: world.tours,
      status: byStatus,
      kinds: byKind,
      kindsP99FirstLastMs: kindsFirstLast,
      fiveXx: fiveXx.length,
      p99FirstMs: round(p99First),
      p99LastMs: round(p99Last),
      p99Ratio: round(p99Last / p99First),
      p99FirstNoHashMs: round(p99FirstNoHash),
      p99LastNoHashMs: round(p99LastNoHash),
      p99RatioNoHash: round(p99LastNoHash / p99FirstNoHash),
      rssFirstMb: rssFirst.map((r) => round(r ?? NaN, 1)),
      rssEndMb: rssEnd.map((r) => round(r ?? NaN, 1)),
      rssRatio: rssRatios.map((r) => round(r, 3)),
      rssTraceMb: rssTrace,
      heapTraceMb: heapTrace,
      liveHeapAfterFullGcMb: { afterFirstWindow: gcFirst.map((l) => l?.heapMb ?? null), atEnd: gcEnd.map((l) => l?.heapMb ?? null) },
      rssAfterFullGcMb: { afterFirstWindow: gcFirst.map((l) => l?.rssMb ?? null), atEnd: gcEnd.map((l) => l?.rssMb ?? null) },
      load: uptime()
    }
    const verdict = (ok: boolean) => (ok ? "met" : "NOT met")
    console.log(`
requests: ${result.requests} (${result.reqPerSec} req/s), shed actions: ${shed}, tours: ${world.tours}
statuses: ${JSON.stringify(byStatus)}
per kind: ${JSON.stringify(byKind)}
5xx: ${fiveXx.length} (${verdict(fiveXx.length === 0)}: zero 5xx)${fiveXx.length ? ` e.g. ${fiveXx[0]!.kind}` : ""}
p99 first ${WINDOW} s: ${result.p99FirstMs} ms, last ${WINDOW} s: ${result.p99LastMs} ms, ratio ${result.p99Ratio} (${verdict(p99Last <= 1.2 * p99First)}: ≤ 1.2)
  without logins and tours (argon2id): ${result.p99FirstNoHashMs} ms -> ${result.p99LastNoHashMs} ms, ratio ${result.p99RatioNoHash}
  per kind, first -> last ${WINDOW} s: ${Object.entries(kindsFirstLast)
    .map(([k, v]) => `${k} ${v.firstMs} -> ${v.lastMs}`)
    .join(", ")} ms
RSS after ${WINDOW} s: ${result.rssFirstMb.join(" / ")} MiB, at the end: ${result.rssEndMb.join(" / ")} MiB, ratio ${result.rssRatio.join(" / ")} (${verdict(rssRatios.every((r) => r <= 1.1))}: within 10 %)
  RSS per window: ${rssTrace.map((w) => w.join(" / ")).join(" -> ")} MiB
  heap per window (smallest-largest): ${heapTrace.map((ws, i) => `instance ${i}: ${ws.map((w) => `${w.heapMinMb}-${w.heapMaxMb}`).join(" -> ")}`).join("; ")} MiB
  live heap after a full collection: after the first window ${result.liveHeapAfterFullGcMb.afterFirstWindow.join(" / ")} MiB, at the end ${result.liveHeapAfterFullGcMb.atEnd.join(" / ")} MiB (RSS then ${result.rssAfterFullGcMb.atEnd.join(" / ")} MiB)
load at the end: ${result.load}`)
    const dir = join(ROOT, "bench/results")
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `soak-${new Date().toISOString().replace(/[:.]/g, "-")}.json`)
    writeFileSync(
      file,
      JSON.stringify(
        { kind: "soak", at: new Date().toISOString(), machine: { cpus: cpus().length, loadavg: loadavg() }, postgres: pg.version, result },
        null,
        2
      )
    )
    console.log(`results: ${file}`)
  } finally {
    for (const f of cleanup.reverse()) await f()
  }
}

await main()
