import type { Subprocess } from "bun"
import { afterAll, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"

// Issue 34 (data and availability): one process at a time on an embedded DATA_DIR. A CLI command
// or a second start beside a running server refuses with one line instead of opening a second
// PGlite on the same files (the admin it "created" was lost) and deleting the server's socket (the
// server went down a minute later); a server killed with SIGKILL leaves no lock behind.
const root = join(import.meta.dir, "../..")
const dataDir = mkdtempSync(join(tmpdir(), "vpn-lock-"))
const otherDir = mkdtempSync(join(tmpdir(), "vpn-lock-other-"))
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(otherDir, { recursive: true, force: true })
})

const baseEnv = () => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DATABASE_URL") env[k] = v
  return env
}

const run = async (args: Array<string>, env: Record<string, string> = {}) => {
  const proc = Bun.spawn([process.execPath, "run", ...args], {
    cwd: root,
    env: { ...baseEnv(), DATA_DIR: dataDir, LOG_LEVEL: "info", ...env },
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

const startServer = (port: number): Subprocess =>
  Bun.spawn([process.execPath, "run", "src/main.ts"], {
    cwd: root,
    env: { ...baseEnv(), PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, LOG_LEVEL: "error" },
    stdout: "ignore",
    stderr: "ignore"
  })

const freePort = () => 20000 + Math.floor(Math.random() * 20000)
const refusal = `a server is running on ${dataDir}: stop it first\n`

describe("one process at a time on an embedded DATA_DIR", () => {
  test("CLI commands and a second start refuse beside a running server; a killed server leaves no lock", async () => {
    const port = freePort()
    let server = startServer(port)
    try {
      await waitForStatus(port)

      for (const args of [
        ["src/cli.ts", "create-admin", "--email", "boss@example.com", "--password", "s3cret-admin-pass"],
        ["src/cli.ts", "seed-demo"],
        ["src/cli.ts", "jobs", "run-once"],
        ["src/cli.ts", "migrate"]
      ]) {
        const cli = await run(args)
        expect({ args, stderr: cli.stderr, code: cli.code }).toEqual({ args, stderr: refusal, code: 1 })
        expect(cli.stdout).toBe("")
      }

      // a second start on the same directory: the same line, never `listening`
      const second = await run(["src/main.ts"], { PORT: String(freePort()), HOST: "127.0.0.1" })
      expect(second.code).toBe(1)
      expect(second.stderr).toBe(refusal)
      expect(second.stdout).not.toContain("listening")

      // a start on the same port (another directory): it fails, and says nothing of listening
      const samePort = await run(["src/main.ts"], { PORT: String(port), HOST: "127.0.0.1", DATA_DIR: otherDir })
      expect(samePort.code).not.toBe(0)
      expect(`${samePort.stdout}${samePort.stderr}`).not.toContain("listening")
      expect(`${samePort.stdout}${samePort.stderr}`).toContain(`Is port ${port} in use?`)

      // the running server kept its socket and its database
      expect(existsSync(join(dataDir, ".s.PGSQL.5432"))).toBe(true)
      const status = await fetch(`http://127.0.0.1:${port}/v1/status`)
      expect(status.status).toBe(200)
      expect(((await status.json()) as { data: { database: string } }).data.database).toBe("ok")

      // SIGKILL: the kernel drops the lock; the stale socket file is no obstacle either
      server.kill("SIGKILL")
      await server.exited
      const created = await run(["src/cli.ts", "create-admin", "--email", "boss@example.com", "--password", "s3cret-admin-pass"])
      expect(created.stderr).toBe("")
      expect(created.stdout).toContain("created admin boss@example.com")
      expect(created.code).toBe(0)

      // what the CLI wrote is what the next server serves
      const again = freePort()
      server = startServer(again)
      await waitForStatus(again)
      const login = await fetch(`http://127.0.0.1:${again}/v1/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "boss@example.com", password: "s3cret-admin-pass" })
      })
      expect(login.status).toBe(200)
    } finally {
      server.kill("SIGKILL")
      await server.exited
    }
  }, 180_000)
})
