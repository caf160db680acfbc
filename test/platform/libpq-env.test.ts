import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"

// [D117] (issue 23, item 12): the embedded database ignores the libpq environment. People with
// PostgreSQL tools installed often have these set; before, the socket URL left the port (and the
// database name) to them and `npm start` looped on "the database is not reachable yet".
const parent = mkdtempSync(join(tmpdir(), "vpn-libpq-"))
afterAll(() => rmSync(parent, { recursive: true, force: true }))

const LIBPQ_ENV = {
  PGHOST: "10.255.255.1",
  PGHOSTADDR: "10.255.255.1",
  PGPORT: "1",
  PG_PORT: "1",
  PGUSER: "somebody-else",
  PGUSERNAME: "somebody-else",
  PGDATABASE: "not_this_one",
  PGPASSWORD: "not-this-password",
  PGSSLMODE: "require",
  PGCONNECT_TIMEOUT: "1",
  PGAPPNAME: "other"
}

for (const driver of ["bun", "pg"] as const) {
  test(`DB_DRIVER=${driver}: the server starts on the embedded database with PGPORT=1, PG_PORT=1, PGHOST, PGDATABASE, PGSSLMODE=require, ... set`, async () => {
    const port = 20000 + Math.floor(Math.random() * 20000)
    const child = Bun.spawn([process.execPath, "run", "src/main.ts"], {
      env: {
        ...process.env,
        ...LIBPQ_ENV,
        PORT: String(port),
        HOST: "127.0.0.1",
        DATA_DIR: join(parent, driver),
        LOG_LEVEL: "error",
        DATABASE_URL: "",
        DB_DRIVER: driver
      },
      stdout: "ignore",
      stderr: "ignore"
    })
    try {
      await waitForStatus(port, 120)
      const status = await fetch(`http://127.0.0.1:${port}/v1/status`)
      expect(status.status).toBe(200)
      // a write and a read through the database, not only the status page
      const register = await fetch(`http://127.0.0.1:${port}/v1/auth/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "Env", email: `env-${driver}@example.com`, password: "Env-pass-12345", password_confirmation: "Env-pass-12345" })
      })
      expect(register.status).toBe(201)
    } finally {
      child.kill("SIGTERM")
      await Promise.race([child.exited, Bun.sleep(12_000)])
      if (child.exitCode === null) child.kill("SIGKILL")
    }
  }, 60_000)
}
