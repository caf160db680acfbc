import { expect, test } from "bun:test"
import { join } from "node:path"

// Issue 35: no global preload boots the database. Under the suite's own configuration
// (bunfig.toml) a file of pure tests runs without PGlite, `pg` or the database fixtures loaded:
// the unit tier's guard (test/support/unit-tier.ts), added as a preload, fails the run if one is.
// The database boots in the first file that asks for it (`makeTestApp`, `sharedDatabase()`).
const ROOT = join(import.meta.dir, "..", "..")

test("a pure test file runs under bunfig.toml without booting the database", async () => {
  const started = performance.now()
  const child = Bun.spawn([process.execPath, "test", "--preload", "./test/support/unit-tier.ts", "test/rules/engines.test.ts"], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, TEST_DATABASE_URL: "" }
  })
  const [code, out] = await Promise.all([child.exited, new Response(child.stderr).text()])
  const ms = Math.round(performance.now() - started)
  expect(out).not.toContain("loaded a database module")
  expect(out).toContain("1 pass")
  expect(code).toBe(0)
  console.log(`[lazy-database] a pure file alone: ${ms} ms`)
})
