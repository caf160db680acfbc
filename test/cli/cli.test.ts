import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeTestApp, type TestApp } from "../support/app.ts"

// The admin CLI of issue 7 (`bun run src/cli.ts ...`), run as a process on an embedded DATA_DIR [D2][D3].
const dataDir = mkdtempSync(join(tmpdir(), "vpn-cli-"))

const cli = async (...args: Array<string>) => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DATABASE_URL") env[k] = v
  const proc = Bun.spawn([process.execPath, "run", "src/cli.ts", ...args], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...env, DATA_DIR: dataDir, LOG_LEVEL: "warning" },
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

let db: PGlite | undefined
let server: PGLiteSocketServer | undefined
let app: TestApp | undefined

/** The API on the database the CLI wrote (after the CLI processes have exited: PGlite is one process). */
const apiOnDataDir = async () => {
  db = await PGlite.create({ dataDir: join(dataDir, "pgdata") })
  server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1", maxConnections: 1 })
  await server.start()
  return makeTestApp({ database: { url: `postgres://postgres@${server.getServerConn()}/postgres`, embedded: true }, reset: false })
}

afterAll(async () => {
  await app?.dispose().catch(() => {})
  await server?.stop().catch(() => {})
  await db?.close().catch(() => {})
  rmSync(dataDir, { recursive: true, force: true })
})

describe("admin CLI", () => {
  test("migrate applies the migrations once; create-admin makes an admin who can log in", async () => {
    const first = await cli("migrate")
    expect(first.stderr).toBe("")
    expect(first.code).toBe(0)
    expect(first.stdout).toContain("database: embedded")
    expect(first.stdout).toContain("1_init")

    const second = await cli("migrate")
    expect(second.code).toBe(0)
    expect(second.stdout).toContain("none (up to date)")

    const bad = await cli("create-admin", "--email", "not-an-email", "--password", "short")
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("The email field must be a valid email address.")
    expect(bad.stderr).toContain("The password field must be at least 8 characters.")

    const created = await cli("create-admin", "--email", " Boss@Example.com ", "--password", "s3cret-admin-pass", "--name", "The Boss")
    expect(created.stderr).toBe("")
    expect(created.code).toBe(0)
    expect(created.stdout).toContain("created admin boss@example.com")

    // twice: nothing changes, the password stays
    const again = await cli("create-admin", "--email", "boss@example.com", "--password", "another-password-1")
    expect(again.code).toBe(0)
    expect(again.stdout).toContain("already exists (password unchanged)")

    app = await apiOnDataDir()
    const rows = await app.sql<{ name: string; role: string; email_verified_at: Date | null }>`
      select name, role, email_verified_at from users where email = 'boss@example.com'`
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ name: "The Boss", role: "admin" })
    expect(rows[0]!.email_verified_at).not.toBeNull()

    const login = await app.post("/v1/auth/login", { body: { email: "boss@example.com", password: "s3cret-admin-pass" } })
    expect(login.status).toBe(200)
    const token: string = login.body.data.token
    // an admin route accepts the token
    const faq = await app.post("/v1/admin/faq", { token, body: { question: "Q?", answer: "A." } })
    expect(faq.status).toBe(201)
    const wrong = await app.post("/v1/auth/login", { body: { email: "boss@example.com", password: "another-password-1" } })
    expect(wrong.status).toBe(401)
  }, 180_000)
})
