import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import pg from "pg"

/**
 * Real server processes (`bun run src/main.ts`) against a real PostgreSQL (issue 9, suites 4-6).
 * They need `TEST_DATABASE_URL` (an admin URL: each suite creates its own database); without it
 * they skip and say why. `scripts/with-postgres.sh` also exports `PG_DATA_DIR` (restart tests).
 */
export const adminUrl = process.env["TEST_DATABASE_URL"]
/**
 * [D126]: `TEST_DATABASE_URL` may go through a transaction pooler (PgBouncer,
 * `scripts/with-pgbouncer.sh`); then `TEST_DATABASE_DIRECT_URL` names the same server directly,
 * and each server started on the pooler gets `DATABASE_DIRECT_URL` for the same database.
 */
export const directAdminUrl = process.env["TEST_DATABASE_DIRECT_URL"]

/** `DATABASE_DIRECT_URL` for a process on `databaseUrl`, when that goes through the pooler */
export const directEnv = (databaseUrl: string): Record<string, string> => {
  const direct = directUrlOf(databaseUrl)
  return direct === undefined ? {} : { DATABASE_DIRECT_URL: direct }
}

/** the direct URL of a database reached through the pooler of `TEST_DATABASE_URL`, if any */
export const directUrlOf = (databaseUrl: string): string | undefined => {
  if (directAdminUrl === undefined || adminUrl === undefined) return undefined
  const url = new URL(databaseUrl)
  const pooler = new URL(adminUrl)
  if (url.host !== pooler.host) return undefined
  const direct = new URL(directAdminUrl)
  url.host = direct.host
  return url.toString()
}
export const skipReason = adminUrl
  ? undefined
  : "TEST_DATABASE_URL is unset: these suites need a real PostgreSQL (run them with `npm run test:faults`, `test:instances`, `test:secrets`)"

export const announceSkip = (suite: string) => {
  if (skipReason) console.log(`[${suite}] skipped: ${skipReason}`)
}

const ROOT = resolve(import.meta.dir, "../..")

/** A new, empty database on the admin URL's server; the servers migrate it at start. */
export const freshDatabase = async (label: string) => {
  const name = `vpn_${label}_${process.pid}_${Date.now()}`
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(adminUrl!)
  url.pathname = `/${name}`
  return { name, url: url.toString() }
}

/** One plain `pg` client on the suite's database, for setup and checks. */
export const connectSql = async (url: string) => {
  const client = new pg.Client({ connectionString: url })
  client.on("error", () => {})
  await client.connect()
  return client
}

export const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => resolvePort(port))
    })
  })

export const newAppKey = () => randomBytes(32).toString("base64")

export interface RunningServer {
  readonly port: number
  readonly base: string
  readonly child: ReturnType<typeof Bun.spawn>
  /** everything the process wrote so far (stdout and stderr) */
  output(): string
  /** SIGTERM, then the exit code (or "timeout") */
  stop(graceMs?: number): Promise<number | "timeout">
}

const collect = (stream: ReadableStream<Uint8Array>, into: Array<string>) => {
  const decoder = new TextDecoder()
  const reader = stream.getReader()
  return (async () => {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      into.push(decoder.decode(value, { stream: true }))
    }
  })().catch(() => {})
}

/** Starts `bun run src/main.ts` on a free loopback port and waits for `/v1/status` 200. */
export const startServer = async (options: {
  readonly databaseUrl: string
  readonly appKey: string
  readonly env?: Record<string, string>
}): Promise<RunningServer> => {
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "vpn-instance-"))
  const chunks: Array<string> = []
  const child = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin",
      HOME: process.env["HOME"] ?? "/tmp",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: options.databaseUrl,
      ...directEnv(options.databaseUrl),
      APP_KEY: options.appKey,
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      TRUST_PROXY: "true",
      GENERAL_RATE_LIMIT: "0",
      PAYMENT_WEBHOOK_SECRET: "whsec_instances",
      ...options.env
    },
    stdout: "pipe",
    stderr: "pipe"
  })
  const readers = [collect(child.stdout, chunks), collect(child.stderr, chunks)]
  const base = `http://127.0.0.1:${port}`
  const output = () => chunks.join("")
  let ready = false
  for (let i = 0; i < 160 && child.exitCode === null; i++) {
    try {
      const res = await fetch(`${base}/v1/status`, { signal: AbortSignal.timeout(2000) })
      if (res.status === 200) {
        ready = true
        break
      }
    } catch {
      // not listening yet
    }
    await Bun.sleep(125)
  }
  if (!ready) {
    child.kill("SIGKILL")
    await child.exited
    await Promise.all(readers)
    rmSync(dataDir, { recursive: true, force: true })
    throw new Error(`server did not start on ${port}:\n${output().slice(-4000)}`)
  }
  return {
    port,
    base,
    child,
    output,
    stop: async (graceMs = 12_000) => {
      if (child.exitCode === null) child.kill("SIGTERM")
      const code = await Promise.race([child.exited, Bun.sleep(graceMs).then(() => "timeout" as const)])
      if (code === "timeout") {
        child.kill("SIGKILL")
        await child.exited
      }
      await Promise.all(readers)
      rmSync(dataDir, { recursive: true, force: true })
      return code
    }
  }
}

export interface Reply {
  readonly status: number
  readonly ms: number
  readonly headers: Headers
  // biome-ignore lint/suspicious/noExplicitAny: a response body the tests read field by field
  readonly body: any
  readonly text: string
}

/** A failed exchange: no response. `code` is the client's error code (ConnectionRefused, ...). */
export class NoResponse extends Error {
  constructor(
    readonly code: string,
    readonly ms: number,
    message: string
  ) {
    super(message)
  }
}

/** One request with a client-side timeout; throws `NoResponse` when no response came. */
let addresses = 0
/**
 * A client address of its own (the servers trust one proxy): registrations in load tests stay
 * out of the per-address register limit of [D30] rev. 2, which is not what they measure.
 */
export const freshAddress = () => {
  addresses++
  return { "x-forwarded-for": `10.${100 + ((addresses >> 16) % 100)}.${(addresses >> 8) & 255}.${addresses & 255}` }
}

export const call = async (
  base: string,
  method: string,
  path: string,
  options: {
    readonly body?: unknown
    readonly token?: string
    readonly headers?: Record<string, string>
    readonly timeoutMs?: number
    readonly close?: boolean
  } = {}
): Promise<Reply> => {
  const headers: Record<string, string> = { accept: "application/json", ...options.headers }
  if (options.body !== undefined) headers["content-type"] = "application/json"
  if (options.token) headers["authorization"] = `Bearer ${options.token}`
  if (options.close) headers["connection"] = "close"
  const start = performance.now()
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      body: options.body === undefined ? null : JSON.stringify(options.body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
      ...(options.close ? { keepalive: false } : {})
    })
    const text = await res.text()
    let body: unknown = undefined
    try {
      body = JSON.parse(text)
    } catch {
      // not JSON (config files)
    }
    return { status: res.status, ms: performance.now() - start, headers: res.headers, body, text }
  } catch (error) {
    const e = error as { code?: string; name?: string; message?: string }
    const code = e.name === "TimeoutError" || e.name === "AbortError" ? "Timeout" : (e.code ?? e.name ?? "Error")
    throw new NoResponse(code, performance.now() - start, String(e.message ?? error))
  }
}

let counter = 0
/** A password that is not common ([D13]) and unique to the run. */
export const strongPassword = () => `Vq9!${randomBytes(9).toString("base64url")}-${++counter}`
export const uniqueEmail = (label: string) => `${label}.${Date.now().toString(36)}.${++counter}@Example.test`

/** Runs the PostgreSQL server tools as its owner (initdb/pg_ctl refuse root). */
export const asPostgres = (args: ReadonlyArray<string>) => (process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : [...args])

export const PG_BIN = process.env["PGBIN"] ?? "/usr/lib/postgresql/15/bin"
