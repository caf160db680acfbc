import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

// Issue 34 (first contact): the CLI as a new operator meets it, run as a child process.
const dataDir = mkdtempSync(join(tmpdir(), "vpn-first-"))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

const cli = async (args: Array<string>, options: { env?: Record<string, string>; stdin?: string } = {}) => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DATABASE_URL" && k !== "NO_COLOR") env[k] = v
  const proc = Bun.spawn([process.execPath, "run", "src/cli.ts", ...args], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...env, DATA_DIR: dataDir, ...options.env },
    stdin: options.stdin === undefined ? "ignore" : new TextEncoder().encode(options.stdin),
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

describe("the CLI, first contact", () => {
  test("a fresh seed-demo ends cleanly: no warning, no stack trace (the outbox pass dies with the command)", async () => {
    const seeded = await cli(["seed-demo"])
    expect(seeded.code).toBe(0)
    expect(seeded.stderr).toBe("")
    expect(seeded.stdout).not.toContain("WARN")
    expect(seeded.stdout).not.toContain("SqlError")
    expect(seeded.stdout).toContain("demo user: demo@demo.example")
  }, 120_000)

  test("--help into a pipe is plain text", async () => {
    for (const args of [["--help"], ["create-admin", "--help"]]) {
      const help = await cli(args)
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("USAGE")
      expect(help.stdout).not.toContain("\u001b[")
    }
  }, 60_000)

  test("create-admin takes the password from standard input or ADMIN_PASSWORD, never only from the command line", async () => {
    const fromStdin = await cli(["create-admin", "--email", "stdin-admin@example.com", "--password-stdin"], { stdin: "s3cret-from-stdin\n" })
    expect(fromStdin.stderr).toBe("")
    expect(fromStdin.stdout).toContain("created admin stdin-admin@example.com")
    const fromEnv = await cli(["create-admin", "--email", "env-admin@example.com"], { env: { ADMIN_PASSWORD: "s3cret-from-env" } })
    expect(fromEnv.stderr).toBe("")
    expect(fromEnv.stdout).toContain("created admin env-admin@example.com")
    const none = await cli(["create-admin", "--email", "nobody@example.com"], { env: { ADMIN_PASSWORD: "" } })
    expect(none.code).toBe(1)
    expect(none.stderr).toBe("create-admin needs a password: --password-stdin (read from standard input) or ADMIN_PASSWORD\n")
    const short = await cli(["create-admin", "--email", "short@example.com", "--password-stdin"], { stdin: "short\n" })
    expect(short.code).toBe(1)
    expect(short.stderr).toContain("The password field must be at least 8 characters.")
  }, 120_000)
})
