/**
 * A throwaway PostgreSQL 15 cluster on a free loopback port, as scripts/with-postgres.sh makes
 * one: initdb refuses root, so the cluster is made and run as the postgres user in a temporary
 * directory it owns; fsync off (a benchmark, not a database anyone keeps).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { freePort, run } from "./proc.ts"

const PGBIN = process.env.PGBIN ?? "/usr/lib/postgresql/15/bin"
const isRoot = process.getuid?.() === 0

const asPg = (args: ReadonlyArray<string>) => (isRoot ? ["runuser", "-u", "postgres", "--", ...args] : [...args])

export interface Postgres {
  readonly url: string
  readonly version: string
  /** the server's log file (auto_explain and statement logs land here) */
  readonly log: string
  readonly stop: () => void
}

/** `settings`: extra `-c name=value` server settings (e.g. a bigger `maintenance_work_mem` for the scale seed). */
export const startPostgres = (settings: Record<string, string> = {}): Postgres => {
  if (!existsSync(`${PGBIN}/initdb`)) {
    if (!isRoot) throw new Error(`PostgreSQL 15 not found in ${PGBIN} (install postgresql-15)`)
    console.log(`PostgreSQL 15 not found in ${PGBIN}: installing it with apt-get`)
    run(["apt-get", "update", "-qq"])
    run(["apt-get", "install", "-y", "-qq", "postgresql-15"], { DEBIAN_FRONTEND: "noninteractive" })
  }
  const dir = mkdtempSync("/tmp/vpn-bench-pg.")
  run(["chmod", "755", dir])
  if (isRoot) run(["chown", "postgres", dir])
  run(asPg([`${PGBIN}/initdb`, "-D", `${dir}/data`, "-U", "postgres", "--auth=trust", "-E", "UTF8"]))
  const port = freePort()
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
    ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)
  ].join(" ")
  run(asPg([`${PGBIN}/pg_ctl`, "-D", `${dir}/data`, "-l", `${dir}/log`, "-w", "-o", options, "start"]))
  const version = run([`${PGBIN}/postgres`, "--version"]).trim()
  let stopped = false
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    version,
    log: `${dir}/log`,
    stop: () => {
      if (stopped) return
      stopped = true
      try {
        run(asPg([`${PGBIN}/pg_ctl`, "-D", `${dir}/data`, "-m", "fast", "stop"]))
      } catch {
        // already gone
      }
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
