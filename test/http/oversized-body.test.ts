import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { connect, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { freePort } from "../instances/harness.ts"

// [D11], issue 19: the rest of an oversized body is read and dropped before the 413, so the client
// reads the 413 instead of a connection reset; nothing past the first 1 MiB is kept. A real server
// process on a real socket: the reset is the kernel's, `toWebHandler` never sees it.

const MiB = 1024 * 1024
const ENVELOPE = { success: false, message: "Payload too large." }
const ROOT = resolve(import.meta.dir, "../..")

let child: ReturnType<typeof Bun.spawn>
let port = 0
const dataDir = mkdtempSync(join(tmpdir(), "vpn-oversized-"))
const probeFile = join(dataDir, "heap-probe.jsonl")

beforeAll(async () => {
  port = await freePort()
  // --smol: the collector runs early, so the memory figure below is what the server keeps, not
  // how far this machine's collector lets garbage pile up (issue 23, item 14)
  // the heap probe (bench/lib/heap-probe.ts): a full collection on SIGUSR2, then the RSS left
  child = Bun.spawn([process.execPath, "--smol", "run", "--preload", join(ROOT, "bench/lib/heap-probe.ts"), "src/main.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      LOG_LEVEL: "error",
      GENERAL_RATE_LIMIT: "0",
      HEAP_PROBE_FILE: probeFile
    },
    stdout: "ignore",
    stderr: "ignore"
  })
  for (let i = 0; i < 240 && child.exitCode === null; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/status`, { signal: AbortSignal.timeout(2000) })
      if (res.status === 200) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(250)
  }
  throw new Error("server did not start")
}, 70_000)

afterAll(async () => {
  child.kill("SIGTERM")
  await Promise.race([child.exited, Bun.sleep(12_000)])
  if (child.exitCode === null) child.kill("SIGKILL")
  rmSync(dataDir, { recursive: true, force: true })
})

/** The server process's resident memory (Linux), in bytes. */
const rss = (): number => {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))
  if (!line) throw new Error("no VmRSS in /proc")
  return Number(line[1]) * 1024
}

/**
 * The server's RSS in MiB right after a full collection (the heap probe answers SIGUSR2): what it
 * holds once garbage is gone, whatever this machine's collector let pile up before.
 */
const rssAfterCollection = async (): Promise<number> => {
  const lines = () =>
    existsSync(probeFile)
      ? readFileSync(probeFile, "utf8")
          .split("\n")
          .filter((l) => l.includes('"fullGc"'))
      : []
  const before = lines().length
  child.kill("SIGUSR2")
  for (let i = 0; i < 200 && lines().length === before; i++) await Bun.sleep(50)
  const last = lines()[before]
  if (last === undefined) throw new Error("the heap probe did not answer SIGUSR2")
  return (JSON.parse(last) as { rssMb: number }).rssMb
}

interface Reply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** One raw HTTP/1.1 connection: what the server wrote, and whether the socket failed (EPIPE, ECONNRESET). */
class Connection {
  private received = Buffer.alloc(0)
  private wake: () => void = () => {}
  error: string | undefined
  closed = false

  private constructor(readonly socket: Socket) {
    const notify = () => this.wake()
    socket.on("data", (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk])
      notify()
    })
    socket.on("drain", notify)
    socket.on("error", (error: NodeJS.ErrnoException) => {
      this.error ??= error.code ?? error.message
      notify()
    })
    socket.on("close", () => {
      this.closed = true
      notify()
    })
  }

  static open(port: number): Promise<Connection> {
    return new Promise((resolveOpen, reject) => {
      const socket = connect(port, "127.0.0.1")
      socket.once("connect", () => resolveOpen(new Connection(socket)))
      socket.once("error", reject)
    })
  }

  /** Waits until `ready` holds (checked on every socket event), the socket closes or fails, or `ms` pass. */
  private async until(ready: () => boolean, ms: number): Promise<boolean> {
    const end = Date.now() + ms
    while (!ready()) {
      if (this.closed || this.error !== undefined || Date.now() >= end) return ready()
      await new Promise<void>((wake) => {
        const timer = setTimeout(wake, Math.min(250, Math.max(0, end - Date.now())))
        this.wake = () => {
          clearTimeout(timer)
          wake()
        }
      })
    }
    return true
  }

  private async write(data: string | Uint8Array): Promise<void> {
    if (this.closed || this.error !== undefined) return
    if (!this.socket.write(data)) await this.until(() => !this.socket.writableNeedDrain, 30_000)
  }

  /** A request whose body goes with its `Content-Length`, or chunked (64 KiB chunks). */
  async send(options: {
    readonly path: string
    readonly body: Uint8Array
    readonly chunked: boolean
    readonly close?: boolean
    readonly stallAfter?: number
  }): Promise<void> {
    const { body, chunked } = options
    await this.write(
      `POST ${options.path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n` +
        (options.close ? "Connection: close\r\n" : "") +
        (chunked ? "Transfer-Encoding: chunked\r\n" : `Content-Length: ${body.byteLength}\r\n`) +
        "\r\n"
    )
    const upTo = options.stallAfter ?? body.byteLength
    for (let at = 0; at < upTo && !this.closed && this.error === undefined; at += 64 * 1024) {
      const part = body.subarray(at, Math.min(upTo, at + 64 * 1024))
      if (chunked) await this.write(`${part.byteLength.toString(16)}\r\n`)
      await this.write(part)
      if (chunked) await this.write("\r\n")
    }
    if (chunked && options.stallAfter === undefined) await this.write("0\r\n\r\n")
  }

  async get(path: string): Promise<void> {
    await this.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`)
  }

  /** The next whole response, or `undefined` when the connection ended (or failed) before it. */
  async reply(ms = 30_000): Promise<Reply | undefined> {
    let parsed: { reply: Reply; size: number } | undefined
    const complete = () => {
      const headEnd = this.received.indexOf("\r\n\r\n")
      if (headEnd < 0) return false
      const lines = this.received.subarray(0, headEnd).toString("latin1").split("\r\n")
      const status = Number(lines[0]?.split(" ")[1])
      const headers: Record<string, string> = {}
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":")
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      // no length (Bun's own bare 413): the body runs to the close
      const length = headers["content-length"] === undefined ? undefined : Number(headers["content-length"])
      if (length === undefined && !this.closed) return false
      const size = headEnd + 4 + (length ?? this.received.byteLength - headEnd - 4)
      if (this.received.byteLength < size) return false
      parsed = { reply: { status, headers, body: this.received.subarray(headEnd + 4, size).toString("utf8") }, size }
      return true
    }
    await this.until(complete, ms)
    if (!parsed) return undefined
    this.received = this.received.subarray(parsed.size)
    return parsed.reply
  }

  /** Waits for the server to close the connection; false when it did not within `ms`. */
  waitClosed(ms = 10_000): Promise<boolean> {
    return this.until(() => this.closed, ms)
  }

  end(): Promise<boolean> {
    this.socket.end()
    return this.waitClosed()
  }
}

const jsonBody = (size: number): Uint8Array => {
  const text = `{"name":"${"x".repeat(size - 11)}"}`
  return new TextEncoder().encode(text)
}

const describeReply = (reply: Reply | undefined) =>
  reply === undefined ? "no response" : `${reply.status} ${JSON.stringify(reply.headers)} ${reply.body.slice(0, 80)}`

const isEnvelope = (reply: Reply | undefined) => {
  if (reply === undefined || reply.status !== 413) return false
  try {
    return JSON.stringify(JSON.parse(reply.body)) === JSON.stringify(ENVELOPE)
  } catch {
    return false
  }
}

describe("oversized bodies [D11] (issue 19)", () => {
  test("200 oversized bodies, declared and chunked, 1.5 and 12 MiB, on fresh and reused connections under load: every one reads the 413 envelope; memory stays bounded", async () => {
    const bodies = { small: jsonBody(1.5 * MiB), large: jsonBody(12 * MiB) }
    // the four kinds in turn: declared 1.5 MiB, chunked 1.5 MiB, declared 12 MiB, chunked 12 MiB
    const kind = (i: number) => ({ chunked: i % 2 === 1, body: i % 4 < 2 ? bodies.small : bodies.large })
    const label = (i: number, where: string) => `#${i} ${where} ${kind(i).chunked ? "chunked" : "declared"} ${kind(i).body === bodies.small ? "1.5" : "12"} MiB`
    const failures: Array<string> = []
    let served = 0

    // 100 on fresh connections: half say `Connection: close` (the client that saw the reset), half
    // close themselves once they have read the answer
    const fresh = async (i: number) => {
      const close = Math.floor(i / 4) % 2 === 0
      const where = close ? "fresh (Connection: close)" : "fresh"
      const connection = await Connection.open(port)
      await connection.send({ path: "/v1/auth/register", ...kind(i), close })
      const reply = await connection.reply()
      const closed = close ? await connection.waitClosed() : await connection.end()
      if (!isEnvelope(reply)) failures.push(`${label(i, where)}: ${describeReply(reply)} (socket error: ${connection.error ?? "none"})`)
      else if (connection.error !== undefined) failures.push(`${label(i, where)}: socket error ${connection.error}`)
      else if (!closed) failures.push(`${label(i, where)}: the connection did not close`)
      else served++
      connection.socket.destroy()
    }

    // 100 on 20 reused connections: a small request first, five oversized bodies, a small one last
    const reused = async (first: number) => {
      const connection = await Connection.open(port)
      await connection.get("/v1/status")
      const before = await connection.reply()
      if (before?.status !== 200) failures.push(`reused #${first}: status before: ${describeReply(before)}`)
      for (let i = first; i < first + 5; i++) {
        await connection.send({ path: "/v1/auth/register", ...kind(i) })
        const reply = await connection.reply()
        if (!isEnvelope(reply)) failures.push(`${label(i, "reused")}: ${describeReply(reply)} (socket error: ${connection.error ?? "none"})`)
        else if (reply?.headers["connection"] === "close") failures.push(`${label(i, "reused")}: the connection was closed`)
        else served++
      }
      await connection.get("/v1/status")
      const after = await connection.reply()
      if (after?.status !== 200) failures.push(`reused #${first}: status after: ${describeReply(after)}`)
      if (connection.error !== undefined) failures.push(`reused #${first}: socket error ${connection.error}`)
      connection.socket.destroy()
    }

    const round = async () => {
      const tasks: Array<() => Promise<void>> = []
      for (let n = 0; n < 20; n++) {
        tasks.push(() => reused(100 + n * 5))
        for (let k = 0; k < 5; k++) {
          const i = n * 5 + k
          tasks.push(() => fresh(i))
        }
      }
      let next = 0
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < tasks.length) await tasks[next++]!()
        })
      )
    }

    // what the 200 bodies come to: a server that kept them would grow by that much a round
    const volume = Array.from({ length: 200 }, (_, i) => kind(i).body.length).reduce((sum, n) => sum + n, 0)
    for (let i = 0; i < 4; i++) await fresh(200 + i)
    let peak = rss()
    const sampler = setInterval(() => {
      peak = Math.max(peak, rss())
    }, 50)

    // the load: small requests on keep-alive connections all along
    let running = true
    const load = { ok: 0, other: 0 }
    const loaders = Array.from({ length: 2 }, async () => {
      while (running) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/v1/status`)
          await res.arrayBuffer()
          if (res.status === 200) load.ok++
          else load.other++
        } catch {
          load.other++
        }
      }
    })

    // two rounds of the same 200 bodies: the first sets how high the collector lets the server
    // grow on this machine, the second must stay there (a server keeping bodies grows by them again)
    const started = Date.now()
    served = 0
    await round()
    const firstServed = served
    const firstPeak = (peak = Math.max(peak, rss()))
    const firstKept = await rssAfterCollection()
    served = 0
    await round()
    running = false
    await Promise.all(loaders)
    clearInterval(sampler)
    peak = Math.max(peak, rss())
    const secondKept = await rssAfterCollection()

    console.log(
      `[oversized] ${firstServed} + ${served} bodies (${Math.round(volume / MiB)} MiB a round) in ${Date.now() - started} ms; ` +
        `load: ${load.ok} ok, ${load.other} other; server RSS peak ${Math.round(firstPeak / MiB)} MiB after the first round, ` +
        `${Math.round(peak / MiB)} MiB after the second (+${Math.round((peak - firstPeak) / MiB)} MiB); ` +
        `after a full collection ${firstKept} MiB, then ${secondKept} MiB`
    )
    expect(failures).toEqual([])
    expect(firstServed).toBe(200)
    expect(served).toBe(200)
    expect(load.other).toBe(0)
    expect(load.ok).toBeGreaterThan(0)
    // issue 23, item 14: the bound is the workload's, not the machine's. The peaks are where this
    // machine's collector lets garbage reach (339 MiB on one machine, 123 on another, and higher
    // again on a busy one, where the collector waits for a core: +358 MiB in one CI run). What the
    // server keeps is measured after a full collection: a second identical round leaves it where
    // the first did, while a server that kept a quarter of the bodies would hold a quarter of
    // their volume more
    expect((secondKept - firstKept) * MiB).toBeLessThan(volume / 4)
  }, 120_000)

  test("a body over the limit that stalls is answered after 5 s, and the connection closed", async () => {
    const body = jsonBody(2 * MiB)
    const declared = await Connection.open(port)
    const chunked = await Connection.open(port)
    const started = Date.now()
    await Promise.all([
      declared.send({ path: "/v1/auth/register", body, chunked: false, stallAfter: 256 * 1024 }),
      chunked.send({ path: "/v1/auth/register", body, chunked: true, stallAfter: 1.25 * MiB })
    ])
    const replies = await Promise.all([declared.reply(15_000), chunked.reply(15_000)])
    const elapsed = Date.now() - started
    for (const [connection, reply] of [
      [declared, replies[0]],
      [chunked, replies[1]]
    ] as const) {
      expect(isEnvelope(reply)).toBe(true)
      expect(reply?.headers["connection"]).toBe("close")
      expect(await connection.waitClosed()).toBe(true)
      connection.socket.destroy()
    }
    expect(elapsed).toBeGreaterThanOrEqual(4_500)
    expect(elapsed).toBeLessThan(12_000)
  }, 30_000)

  test("a chunked body within the limit is read by the handler, and the connection stays usable", async () => {
    const connection = await Connection.open(port)
    const text = JSON.stringify({
      name: "x".repeat(900 * 1024),
      email: "not-an-email",
      password: "correct horse battery staple 42",
      password_confirmation: "correct horse battery staple 42"
    })
    await connection.send({ path: "/v1/auth/register", body: new TextEncoder().encode(text), chunked: true })
    const reply = await connection.reply()
    expect(reply?.status).toBe(422)
    const errors = JSON.parse(reply!.body).errors
    // the handler parsed the JSON: the fields are judged, not the body
    expect(errors.email).toBeDefined()
    expect(errors.body).toBeUndefined()
    await connection.get("/v1/status")
    expect((await connection.reply())?.status).toBe(200)
    connection.socket.destroy()
  })
})
