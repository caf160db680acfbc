/**
 * The typed client is a package of its own (packages/client, a workspace; issue 28): its build
 * emits JavaScript and `.d.ts`, and its example runs against a fresh server.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"

const dir = mkdtempSync(join(tmpdir(), "vpn-client-"))
const port = 20000 + Math.floor(Math.random() * 20000)
let server: ReturnType<typeof Bun.spawn> | undefined

beforeAll(async () => {
  server = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    env: { ...process.env, PORT: String(port), DATA_DIR: join(dir, "data"), LOG_LEVEL: "error" },
    stdout: "ignore",
    stderr: "ignore"
  })
  await waitForStatus(port, 480) // up to 2 min: a fresh embedded database on a busy machine
}, 150_000)

afterAll(() => {
  server?.kill("SIGTERM")
  rmSync(dir, { recursive: true, force: true })
})

test("the package builds: a bundle and the declarations of the contract", () => {
  const build = Bun.spawnSync(["npm", "run", "build", "--workspace", "@vpn-api/client"], { stdout: "pipe", stderr: "pipe" })
  expect(build.exitCode, build.stderr.toString() + build.stdout.toString()).toBe(0)
  const root = "packages/client/dist"
  expect(existsSync(join(root, "index.js"))).toBe(true)
  const types = readFileSync(join(root, "types/packages/client/src/index.d.ts"), "utf8")
  expect(types).toContain("makeClient")
  expect(existsSync(join(root, "types/src/Api.d.ts"))).toBe(true)

  // issue 34: the contract carries no server code; the bundle imports its peers only (no
  // @effect/sql, node:net, dns, child_process, stripe, mustache), and so do the declarations
  const imported = (text: string) => [...text.matchAll(/(?<![\w"'$.])(?:from|import|require)\s*\(?\s*"([^"./\n][^"\n]*)"/g)].map((m) => m[1]!)
  const notPeer = (specifier: string) => !/^(effect|@effect\/platform)(\/|$)/.test(specifier)
  expect([...new Set(imported(readFileSync(join(root, "index.js"), "utf8")).filter(notPeer))]).toEqual([])
  const declarations = [...new Bun.Glob("types/**/*.d.ts").scanSync({ cwd: root })]
  expect(declarations.length).toBeGreaterThan(10)
  const foreign = declarations.flatMap((file) => imported(readFileSync(join(root, file), "utf8")).filter(notPeer))
  expect([...new Set(foreign)]).toEqual([])
}, 180_000)

test("the example runs against a fresh server: register, plans, an order, the pending invoices", () => {
  const run = Bun.spawnSync([process.execPath, "run", "packages/client/example.ts"], {
    env: { ...process.env, BASE_URL: `http://127.0.0.1:${port}` },
    stdout: "pipe",
    stderr: "pipe"
  })
  const out = run.stdout.toString()
  expect(run.exitCode, run.stderr.toString()).toBe(0)
  expect(out).toContain("database: ok")
  expect(out).toMatch(/plans: \d+/)
  expect(out).toMatch(/registered example-\d+@example\.com/)
  expect(out).toMatch(/pending invoices: \d+/)
}, 60_000)
