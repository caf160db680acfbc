import { chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { asPostgres, freePort, PG_BIN } from "./harness.ts"

/**
 * A real streaming replica of the test PostgreSQL ([D126]): `pg_basebackup -R` of the server
 * `TEST_DATABASE_URL` names, started on a free loopback port. Its replay can be paused, which
 * makes it lag by as much as a test wants. Needs the server's tools (`PGBIN`), replication allowed
 * from 127.0.0.1 (initdb's default `pg_hba.conf` allows it) and, under root, the postgres user.
 */
export interface Replica {
  /** the URL of `database` on the replica */
  readonly urlOf: (database: string) => string
  /** stops applying the primary's changes: reads on it lag from now on */
  readonly pause: () => Promise<void>
  readonly resume: () => Promise<void>
  /** waits until the replica has applied everything the primary wrote so far */
  readonly catchUp: (timeoutMs?: number) => Promise<void>
  readonly stop: () => Promise<void>
}

export const replicaSkipReason = (): string | undefined => (existsSync(join(PG_BIN, "pg_basebackup")) ? undefined : `no pg_basebackup in ${PG_BIN}`)

const run = async (args: ReadonlyArray<string>) => {
  const child = Bun.spawn(asPostgres(args), { stdout: "pipe", stderr: "pipe" })
  const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  if (code !== 0) throw new Error(`${args.join(" ")} exited ${code}: ${out}${err}`)
}

export const startReplica = async (adminUrl: string): Promise<Replica> => {
  const primary = new URL(adminUrl)
  const dir = mkdtempSync("/tmp/vpn-replica-")
  if (process.getuid?.() === 0) {
    const uid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim())
    const gid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim())
    chownSync(dir, uid, gid)
  }
  const port = await freePort()
  const data = join(dir, "data")
  await run([
    join(PG_BIN, "pg_basebackup"),
    "-h",
    primary.hostname,
    "-p",
    primary.port || "5432",
    "-U",
    decodeURIComponent(primary.username || "postgres"),
    "-D",
    data,
    "-R",
    "-X",
    "stream",
    "-c",
    "fast"
  ])
  await run([
    join(PG_BIN, "pg_ctl"),
    "-D",
    data,
    "-l",
    join(dir, "log"),
    "-w",
    "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c hot_standby=on -c fsync=off -c max_connections=400`,
    "start"
  ]).catch(async (e: Error) => {
    const log = await Bun.file(join(dir, "log"))
      .text()
      .catch(() => "")
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`${e.message}\n${log}`)
  })
  const urlOf = (database: string) => {
    const url = new URL(adminUrl)
    url.port = String(port)
    url.pathname = `/${database}`
    return url.toString()
  }
  const query = async <T extends pg.QueryResultRow>(url: string, text: string): Promise<Array<T>> => {
    const client = new pg.Client({ connectionString: url })
    client.on("error", () => {})
    await client.connect()
    try {
      return (await client.query<T>(text)).rows
    } finally {
      await client.end()
    }
  }
  const onReplica = (text: string) => query(urlOf("postgres"), text)
  return {
    urlOf,
    pause: async () => {
      await onReplica("select pg_wal_replay_pause()")
    },
    resume: async () => {
      await onReplica("select pg_wal_replay_resume()")
    },
    catchUp: async (timeoutMs = 15_000) => {
      const [{ lsn }] = (await query<{ lsn: string }>(adminUrl, "select pg_current_wal_lsn()::text as lsn")) as [{ lsn: string }]
      const start = Date.now()
      for (;;) {
        const [row] = await query<{ done: boolean }>(urlOf("postgres"), `select coalesce(pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn, false) as done`)
        if (row?.done === true) return
        if (Date.now() - start > timeoutMs) throw new Error(`the replica did not reach ${lsn} within ${timeoutMs} ms`)
        await Bun.sleep(50)
      }
    },
    stop: async () => {
      await run([join(PG_BIN, "pg_ctl"), "-D", data, "-m", "immediate", "stop"]).catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
