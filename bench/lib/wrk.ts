/**
 * `wrk` (Debian's package) on loopback, one thread, with a Lua `done` hook that prints the
 * figures as one JSON line. Installs wrk with apt-get when it is missing and we are root.
 */
import { mkdtempSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { run } from "./proc.ts"

export const ensureWrk = (): string => {
  const which = Bun.which("wrk")
  if (which) return which
  if (process.getuid?.() !== 0) throw new Error("wrk is not installed (apt-get install wrk)")
  console.log("wrk not found: installing it with apt-get")
  run(["apt-get", "update", "-qq"])
  run(["apt-get", "install", "-y", "-qq", "wrk"], { DEBIAN_FRONTEND: "noninteractive" })
  const installed = Bun.which("wrk")
  if (!installed) throw new Error("wrk still missing after apt-get install wrk")
  return installed
}

export interface WrkResult {
  readonly requests: number
  readonly seconds: number
  readonly rps: number
  readonly p50Ms: number
  readonly p90Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** connect/read/write/timeout errors and non-2xx/3xx responses */
  readonly errors: { connect: number; read: number; write: number; status: number; timeout: number }
}

const REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
`

const scriptDir = mkdtempSync("/tmp/vpn-bench-lua.")
let scripts = 0

export interface WrkOptions {
  readonly url: string
  readonly seconds: number
  readonly connections: number
  readonly headers?: Record<string, string>
  /** extra Lua (request/delay/init functions) put before the report hook */
  readonly lua?: string
  /** arguments handed to the Lua `init(args)` */
  readonly args?: ReadonlyArray<string>
}

const command = (o: WrkOptions) => {
  const file = join(scriptDir, `s${scripts++}.lua`)
  writeFileSync(file, `${o.lua ?? ""}\n${REPORT}`)
  const headers = Object.entries(o.headers ?? {}).flatMap(([k, v]) => ["-H", `${k}: ${v}`])
  return [
    "wrk",
    "-t1",
    `-c${o.connections}`,
    `-d${o.seconds}s`,
    "--timeout",
    "5s",
    "-s",
    file,
    ...headers,
    o.url,
    ...(o.args && o.args.length > 0 ? ["--", ...o.args] : [])
  ]
}

const parse = (stdout: string, cmd: ReadonlyArray<string>): WrkResult => {
  const line = stdout.split("\n").find((l) => l.startsWith("BENCH_JSON "))
  if (!line) throw new Error(`wrk printed no result (${cmd.join(" ")}):\n${stdout}`)
  const raw = JSON.parse(line.slice("BENCH_JSON ".length)) as {
    requests: number
    duration_us: number
    p50_us: number
    p90_us: number
    p99_us: number
    max_us: number
    errors: WrkResult["errors"]
  }
  const seconds = raw.duration_us / 1e6
  return {
    requests: raw.requests,
    seconds,
    rps: raw.requests / seconds,
    p50Ms: raw.p50_us / 1000,
    p90Ms: raw.p90_us / 1000,
    p99Ms: raw.p99_us / 1000,
    maxMs: raw.max_us / 1000,
    errors: raw.errors
  }
}

/** Runs wrk to completion. */
export const wrk = async (o: WrkOptions): Promise<WrkResult> => {
  const cmd = command(o)
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe" })
  const [stdout, stderr] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()])
  await p.exited
  if (p.exitCode !== 0) throw new Error(`wrk exited ${p.exitCode}: ${stderr}`)
  return parse(stdout, cmd)
}

/** A paced probe: each connection waits `delayMs` between requests (latency under a light load). */
export const pacedLua = (delayMs: number) => `delay = function() return ${delayMs} end\n`

/**
 * Logins that each count against a fresh address and an e-mail used at most once per run:
 * `X-Forwarded-For` from a counter (the server runs with TRUST_PROXY=true), the e-mail
 * `login-<n>@bench.example` rotating from `offset` over `users` seeded accounts.
 */
export const loginLua = `
local counter = 0
local offset, users, password = 0, 1, ""
init = function(args)
  offset = tonumber(args[1]); users = tonumber(args[2]); password = args[3]
end
request = function()
  local i = offset + counter
  counter = counter + 1
  local body = string.format('{"email":"login-%d@bench.example","password":"%s"}', i % users, password)
  local ip = string.format("10.%d.%d.%d", math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256)
  return wrk.format("POST", "/v1/auth/login", { ["Content-Type"] = "application/json", ["X-Forwarded-For"] = ip }, body)
end
`
