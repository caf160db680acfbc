import { afterAll, expect, test } from "bun:test"
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"

// [D2] rev. 2: the embedded database is private to the process. DATA_DIR 0700, every file under
// it 0600, and no TCP port but the API's own: PGlite is reached through a Unix socket in DATA_DIR.
const parent = mkdtempSync(join(tmpdir(), "vpn-private-"))
const dataDir = join(parent, "data")
afterAll(() => rmSync(parent, { recursive: true, force: true }))

/** Every path under `dir` whose mode lets the group or others in, with its mode. */
const openToOthers = (dir: string): Array<string> => {
  const found: Array<string> = []
  const walk = (path: string) => {
    const stat = lstatSync(path)
    if (!stat.isSymbolicLink() && (stat.mode & 0o077) !== 0) found.push(`${path} ${(stat.mode & 0o777).toString(8)}`)
    if (stat.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry))
  }
  walk(dir)
  return found
}

/** The TCP ports a process listens on (Linux: its socket inodes matched against /proc/net/tcp*). */
const listeningPorts = (pid: number): Array<number> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      const match = /^socket:\[(\d+)\]$/.exec(target)
      if (match) inodes.add(match[1]!)
    } catch {
      // closed meanwhile
    }
  }
  const ports: Array<number> = []
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = ""
    try {
      text = readFileSync(table, "utf8")
    } catch {
      continue
    }
    for (const line of text.trim().split("\n").slice(1)) {
      const columns = line.trim().split(/\s+/)
      // local address, state 0A = LISTEN, inode in column 9
      if (columns[3] === "0A" && inodes.has(columns[9]!)) ports.push(parseInt(columns[1]!.split(":")[1]!, 16))
    }
  }
  return ports
}

test("after start: nothing under DATA_DIR is open to the group or others; the API port is the only TCP listener", async () => {
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "error", DATABASE_URL: "" },
    stdout: "ignore",
    stderr: "ignore"
  })
  try {
    await waitForStatus(port)
    const register = await fetch(`http://127.0.0.1:${port}/v1/auth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "Private", email: "private@example.com", password: "Private-pass-1", password_confirmation: "Private-pass-1" })
    })
    expect(register.status).toBe(201)
    expect(lstatSync(dataDir).mode & 0o777).toBe(0o700)
    expect(readdirSync(join(dataDir, "pgdata")).length).toBeGreaterThan(0)
    expect(openToOthers(dataDir)).toEqual([])
    if (process.platform === "linux") expect(listeningPorts(child.pid)).toEqual([port])
  } finally {
    child.kill("SIGTERM")
    await Promise.race([child.exited, Bun.sleep(12_000)])
  }
}, 60_000)
