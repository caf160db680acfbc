/**
 * [D126], issue 41: failover on a real Patroni cluster, driven from scripts/check-failover.sh
 * (which installs the packages, makes `$HA` and tears everything down). Here: etcd, three
 * Patroni members, HAProxy, two API instances on HAProxy's read-write port, a write load that
 * records every acknowledged write, and three events (a planned switchover, a kill -9 of the
 * primary's postmaster, the loss of the primary's node). For each event it prints the seconds of
 * 503s, the longest request, the time until both instances' LISTEN connections were back on
 * the new primary, and how long a device deleted through one instance took to leave a node
 * agent's interface on the other's push stream (./agent.ts); then `acknowledged N, lost M`.
 * Exits non-zero on any lost write, any 5xx other than 503, any request over 10 s, a removal not
 * on the agent within 2 s, or an instance that does not recover.
 */
import { chownSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import pg from "pg"
import { LISTEN_APPLICATION_NAME } from "../../src/catalog/CatalogCache.ts"
import { LISTEN_PEERS_APPLICATION_NAME } from "../../src/vpn/PeerWake.ts"
import { startNodeAgent } from "./agent.ts"
import { call, newAppKey, type RunningServer, startServer, strongPassword } from "../../test/instances/harness.ts"

const HA = process.env["HA"]
if (HA === undefined) throw new Error("HA is not set: run scripts/check-failover.sh")
const BIN = "/usr/lib/postgresql/15/bin"
const ETCD = 23790
const MEMBERS = [
  { name: "pg1", rest: 28008, port: 55431 },
  { name: "pg2", rest: 28009, port: 55432 },
  { name: "pg3", rest: 28010, port: 55433 }
] as const
type Member = (typeof MEMBERS)[number]
const RW_PORT = 55500
const RO_PORT = 55501
const PGBOUNCER_PORT = 55600
/** HAProxy's read-write port: the primary, wherever it is */
const DB_URL = `postgres://postgres:postgres@127.0.0.1:${RW_PORT}/vpn`
/**
 * `FAILOVER_POOLER=pgbouncer` (the script's second run): the API's DATABASE_URL is PgBouncer in
 * transaction mode in front of that port, its DATABASE_DIRECT_URL the port itself ([D126])
 */
const POOLER = process.env["FAILOVER_POOLER"] === "pgbouncer" ? "pgbouncer" : undefined
const API_URL = POOLER === undefined ? DB_URL : `postgres://postgres:postgres@127.0.0.1:${PGBOUNCER_PORT}/vpn`
const MAX_REQUEST_MS = 10_000
const problems: Array<string> = []
const children: Array<ReturnType<typeof Bun.spawn>> = []
const patronis = new Map<string, ReturnType<typeof Bun.spawn>>()

const log = (line: string) => console.log(`[failover${POOLER === undefined ? "" : ` ${POOLER}`}] ${line}`)
const postgresUid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim())
const postgresGid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim())

const spawn = (cmd: Array<string>, logFile: string) => {
  const child = Bun.spawn(cmd, { stdout: Bun.file(logFile), stderr: Bun.file(logFile), cwd: HA })
  children.push(child)
  return child
}

const memberYaml = (m: Member) => `scope: vpn-ha-ci
namespace: /service/
name: ${m.name}
restapi: {listen: 127.0.0.1:${m.rest}, connect_address: 127.0.0.1:${m.rest}}
etcd3: {hosts: 127.0.0.1:${ETCD}}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 2
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters: {max_connections: 200, shared_buffers: 32MB, wal_level: replica, hot_standby: "on",
                   max_wal_senders: 10, max_replication_slots: 10, wal_keep_size: 128MB}
  initdb: [{encoding: UTF8}, data-checksums, {auth: trust}]
  pg_hba: [local all all trust, host replication replicator 127.0.0.1/32 trust, host all all 127.0.0.1/32 trust]
postgresql:
  listen: 127.0.0.1:${m.port}
  connect_address: 127.0.0.1:${m.port}
  data_dir: ${HA}/${m.name}/data
  bin_dir: ${BIN}
  pgpass: ${HA}/${m.name}/pgpass
  authentication: {superuser: {username: postgres, password: postgres},
    replication: {username: replicator, password: rep-pass}, rewind: {username: postgres, password: postgres}}
  parameters: {unix_socket_directories: ${HA}/${m.name}}
`

const haproxyCfg = () => {
  const servers = (check: string) =>
    MEMBERS.map((m) => `    server ${m.name} 127.0.0.1:${m.port} maxconn 200 check port ${m.rest}`).join("\n") + `\n    # ${check}`
  return `global
    maxconn 500
defaults
    mode tcp
    retries 2
    timeout connect 3s
    timeout client 30m
    timeout server 30m
    timeout check 2s
listen postgres_rw
    bind 127.0.0.1:${RW_PORT}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${servers("read-write")}
listen postgres_ro
    bind 127.0.0.1:${RO_PORT}
    balance roundrobin
    option httpchk GET /replica
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
${servers("read-only")}
`
}

const restStatus = async (m: Member, path: string) => {
  try {
    return (await fetch(`http://127.0.0.1:${m.rest}${path}`, { signal: AbortSignal.timeout(1000) })).status
  } catch {
    return 0
  }
}

const waitFor = async (what: string, cond: () => Promise<boolean>, timeoutMs: number) => {
  const start = performance.now()
  while (!(await cond())) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await Bun.sleep(100)
  }
  return performance.now() - start
}

const startPatroni = (m: Member) => {
  // setpriv execs Patroni in place (runuser forks): the child's pid is Patroni's, to kill it
  const child = spawn(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "patroni", join(HA, `${m.name}.yml`)], join(HA, `${m.name}.log`))
  patronis.set(m.name, child)
}

const leader = async (): Promise<Member | undefined> => {
  for (const m of MEMBERS) if ((await restStatus(m, "/primary")) === 200) return m
  return undefined
}

const syncStandby = async (): Promise<Member | undefined> => {
  for (const m of MEMBERS) if ((await restStatus(m, "/sync")) === 200) return m
  return undefined
}

const postmasterPid = async (m: Member) => {
  const text = await Bun.file(join(HA, m.name, "data", "postmaster.pid")).text()
  return Number(text.split("\n")[0])
}

const startCluster = async () => {
  mkdirSync(join(HA, "etcd"))
  spawn(
    [
      "etcd",
      "--name",
      "vpn-ha-etcd",
      "--data-dir",
      join(HA, "etcd"),
      "--listen-client-urls",
      `http://127.0.0.1:${ETCD}`,
      "--advertise-client-urls",
      `http://127.0.0.1:${ETCD}`,
      "--listen-peer-urls",
      "http://127.0.0.1:23800",
      "--initial-advertise-peer-urls",
      "http://127.0.0.1:23800",
      "--initial-cluster",
      "vpn-ha-etcd=http://127.0.0.1:23800",
      "--initial-cluster-state",
      "new",
      "--enable-v2=true"
    ],
    join(HA, "etcd.log")
  )
  await waitFor(
    "etcd",
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${ETCD}/health`)).ok
      } catch {
        return false
      }
    },
    30_000
  )
  for (const m of MEMBERS) {
    mkdirSync(join(HA, m.name), { mode: 0o700 })
    chownSync(join(HA, m.name), postgresUid, postgresGid)
    writeFileSync(join(HA, `${m.name}.yml`), memberYaml(m))
  }
  startPatroni(MEMBERS[0])
  await waitFor("pg1 primary", async () => (await restStatus(MEMBERS[0], "/primary")) === 200, 60_000)
  startPatroni(MEMBERS[1])
  startPatroni(MEMBERS[2])
  await waitFor("two replicas", async () => (await restStatus(MEMBERS[1], "/replica")) === 200 && (await restStatus(MEMBERS[2], "/replica")) === 200, 90_000)
  await waitFor("a synchronous standby", async () => (await syncStandby()) !== undefined, 60_000)
  writeFileSync(join(HA, "haproxy.cfg"), haproxyCfg())
  spawn(["haproxy", "-f", join(HA, "haproxy.cfg")], join(HA, "haproxy.log"))
  const admin = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${RW_PORT}/postgres` })
  admin.on("error", () => {})
  // HAProxy starts with every server up until its checks say otherwise: wait until five
  // connections in a row reach the primary
  let inARow = 0
  await waitFor(
    "HAProxy's read-write port on the primary",
    async () => {
      try {
        const c = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${RW_PORT}/postgres` })
        c.on("error", () => {})
        await c.connect()
        const {
          rows: [row]
        } = await c.query<{ replica: boolean }>("select pg_is_in_recovery() as replica")
        await c.end()
        inARow = row!.replica ? 0 : inARow + 1
      } catch {
        inARow = 0
      }
      return inARow >= 5
    },
    30_000
  )
  await admin.connect()
  await admin.query("create database vpn")
  await admin.end()
  if (POOLER !== undefined) await startPgBouncer()
}

/**
 * PgBouncer 1.18 in transaction mode in front of HAProxy's read-write port, as the postgres user
 * (it refuses root). `server_login_retry = 1`: the default 15 s would turn a switchover into 15 s
 * of refusals; `query_wait_timeout = 5`: a client waiting for a server connection during an
 * outage gets an error (a 503) rather than waiting out the request's deadline.
 */
const startPgBouncer = async () => {
  const dir = join(HA, "pgbouncer")
  mkdirSync(dir, { mode: 0o700 })
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    `[databases]
* = host=127.0.0.1 port=${RW_PORT}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${PGBOUNCER_PORT}
unix_socket_dir =
auth_type = trust
auth_file = ${dir}/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
server_login_retry = 1
query_wait_timeout = 5
ignore_startup_parameters = extra_float_digits
logfile = ${dir}/pgbouncer.log
pidfile = ${dir}/pgbouncer.pid
`
  )
  writeFileSync(join(dir, "userlist.txt"), `"postgres" "postgres"\n`)
  for (const file of ["", "pgbouncer.ini", "userlist.txt"]) chownSync(join(dir, file), postgresUid, postgresGid)
  spawn(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "pgbouncer", join(dir, "pgbouncer.ini")], join(HA, "pgbouncer.log"))
  await waitFor(
    "PgBouncer",
    async () => {
      const c = new pg.Client({ connectionString: API_URL.replace("/vpn", "/postgres"), connectionTimeoutMillis: 2000 })
      c.on("error", () => {})
      try {
        await c.connect()
        await c.query("select 1")
        return true
      } catch {
        return false
      } finally {
        await c.end().catch(() => {})
      }
    },
    20_000
  )
}

/** A query on the current primary through HAProxy, retried across a failover. */
const onPrimary = async <T extends pg.QueryResultRow>(text: string, values: Array<unknown> = []): Promise<Array<T>> => {
  for (let attempt = 0; ; attempt++) {
    const client = new pg.Client({ connectionString: DB_URL, connectionTimeoutMillis: 3000 })
    client.on("error", () => {})
    try {
      await client.connect()
      return (await client.query<T>(text, values)).rows
    } catch (e) {
      if (attempt >= 60) throw e
      await Bun.sleep(250)
    } finally {
      await client.end().catch(() => {})
    }
  }
}

// ---- the load ------------------------------------------------------------------------------

interface Outcome {
  readonly at: number
  readonly ms: number
  readonly status: number
  readonly instance: number
}
const outcomes: Array<Outcome> = []
const acknowledgedUsers: Array<string> = []
const acknowledgedInvoices: Array<string> = []
const tokens: Array<string> = []
let loadRunning = true
let addressCounter = 0

const timed = async (instance: number, run: () => Promise<{ status: number }>) => {
  const at = performance.now()
  let status = 0
  try {
    status = (await run()).status
  } catch {
    status = 0
  }
  const ms = performance.now() - at
  outcomes.push({ at, ms, status, instance })
  if (ms > MAX_REQUEST_MS) problems.push(`a request of instance ${instance} took ${(ms / 1000).toFixed(1)} s`)
  if (status >= 500 && status !== 503) problems.push(`instance ${instance} answered ${status}`)
  if (status === 0) problems.push(`instance ${instance} did not answer (connection failed or timed out)`)
  return status
}

const runLoad = async (servers: ReadonlyArray<RunningServer>, plan: { id: number; cycle: number }) => {
  let tick = 0
  const inFlight = new Set<Promise<unknown>>()
  while (loadRunning) {
    const i = tick % servers.length
    const server = servers[i]!
    const n = ++addressCounter
    const headers = { "x-forwarded-for": `10.77.${(n >> 8) & 255}.${n & 255}` }
    const job =
      tick % 3 === 2 && tokens.length > 0
        ? (async () => {
            const token = tokens[(tick * 7) % tokens.length]!
            let uuid = ""
            const status = await timed(i, async () => {
              const res = await call(server.base, "POST", "/v1/orders", {
                token,
                headers,
                body: { plan_id: plan.id, cycle_id: plan.cycle },
                timeoutMs: MAX_REQUEST_MS + 5000
              })
              uuid = res.status === 201 ? res.body.data.uuid : ""
              return res
            })
            if (status === 201) acknowledgedInvoices.push(uuid)
          })()
        : (async () => {
            const email = `failover.${n}.${Date.now().toString(36)}@example.test`
            const password = strongPassword()
            let token = ""
            const status = await timed(i, async () => {
              const res = await call(server.base, "POST", "/v1/auth/register", {
                headers,
                body: { name: "Failover", email, password, password_confirmation: password },
                timeoutMs: MAX_REQUEST_MS + 5000
              })
              token = res.status === 201 ? res.body.data.token : ""
              return res
            })
            if (status === 201) {
              acknowledgedUsers.push(email)
              tokens.push(token)
            }
          })()
    inFlight.add(job)
    void job.finally(() => inFlight.delete(job))
    tick++
    await Bun.sleep(150)
  }
  await Promise.all(inFlight)
}

// ---- the events ----------------------------------------------------------------------------

/** both instances answered `ok` successes after `from`, the latest failure before them */
const recoveredAt = (from: number, instances: number) => {
  for (let i = 0; i < instances; i++) {
    const after = outcomes.filter((o) => o.instance === i && o.at >= from)
    const lastFailure = after.filter((o) => o.status >= 500 || o.status === 0).at(-1)
    const successesAfter = after.filter((o) => o.status < 500 && o.status !== 0 && (lastFailure === undefined || o.at > lastFailure.at))
    if (successesAfter.length < 3) return undefined
  }
  return performance.now()
}

const listenersOnPrimary = async () => {
  const rows = await onPrimary<{ name: string; n: number }>(
    `select application_name as name, count(*)::int as n from pg_stat_activity
     where datname = 'vpn' and application_name = any($1) and query ilike 'listen%' group by application_name`,
    [[LISTEN_APPLICATION_NAME, LISTEN_PEERS_APPLICATION_NAME]]
  )
  return rows
}

const event = async (name: string, servers: ReadonlyArray<RunningServer>, act: () => Promise<void>) => {
  // synchronous_mode promotes only the synchronous standby: the cluster must have one again
  // (after the previous event) for a failover to be allowed at all
  await waitFor(
    `${name}: a synchronous standby before the event`,
    async () => {
      const [primary, sync] = [await leader(), await syncStandby()]
      return primary !== undefined && sync !== undefined && sync.name !== primary.name
    },
    90_000
  )
  const before = await leader()
  const from = performance.now()
  log(`${name}: leader ${before?.name ?? "?"}`)
  await act()
  try {
    await waitFor(`${name}: both instances serving writes`, async () => recoveredAt(from, servers.length) !== undefined, 60_000)
  } catch (e) {
    problems.push(`${name}: ${(e as Error).message}`)
  }
  const recovered = performance.now()
  const after = await leader()
  // LISTEN: both instances' catalogue and peer listeners on the new primary
  let listenMs = Number.NaN
  try {
    listenMs = await waitFor(
      `${name}: LISTEN on the new primary`,
      async () => {
        const rows = await listenersOnPrimary()
        return rows.length === 2 && rows.every((r) => r.n === servers.length)
      },
      15_000
    )
  } catch (e) {
    problems.push((e as Error).message)
  }
  const during = outcomes.filter((o) => o.at >= from && o.at <= recovered)
  const unavailable = during.filter((o) => o.status === 503)
  const span = unavailable.length === 0 ? 0 : (unavailable.at(-1)!.at + unavailable.at(-1)!.ms - unavailable[0]!.at) / 1000
  const longest = during.reduce((max, o) => Math.max(max, o.ms), 0)
  log(
    `${name}: leader ${before?.name ?? "?"} -> ${after?.name ?? "?"}; ${unavailable.length} x 503 over ${span.toFixed(1)} s; ` +
      `longest request ${(longest / 1000).toFixed(2)} s; LISTEN back on the primary ${(listenMs / 1000).toFixed(1)} s after the writes recovered`
  )
  if (listenMs > 5000) problems.push(`${name}: LISTEN resumed after ${(listenMs / 1000).toFixed(1)} s (over 5 s)`)
  // a plan created now reaches both instances' catalogue
  await Bun.sleep(1500)
}

const main = async () => {
  await startCluster()
  log(`cluster up: leader ${(await leader())?.name}, synchronous standby ${(await syncStandby())?.name}`)
  const appKey = newAppKey()
  const adminEmail = "failover-admin@example.test"
  const adminPassword = strongPassword()
  const env = {
    LOG_LEVEL: "warn",
    ADMIN_EMAIL: adminEmail,
    ADMIN_PASSWORD: adminPassword,
    TRUST_PROXY: "1",
    // the replicas (HAProxy's read-only port) for the reads that may lag
    DATABASE_READ_URL: `postgres://postgres:postgres@127.0.0.1:${RO_PORT}/vpn`,
    ...(POOLER === undefined ? {} : { DATABASE_DIRECT_URL: DB_URL })
  }
  const a = await startServer({ databaseUrl: API_URL, appKey, env })
  const b = await startServer({ databaseUrl: API_URL, appKey, env })
  const servers = [a, b]
  let nodeAgent: Awaited<ReturnType<typeof startNodeAgent>> | undefined
  try {
    const login = await call(a.base, "POST", "/v1/auth/login", { body: { email: adminEmail, password: adminPassword } })
    if (login.status !== 200) throw new Error(`admin login: ${login.status} ${login.text}`)
    const adminToken = login.body.data.token as string
    const planOf = async (name: string) => {
      const plan = await call(a.base, "POST", "/v1/admin/plans", { token: adminToken, body: { name, description: "failover" } })
      if (plan.status !== 201) throw new Error(`plan: ${plan.status} ${plan.text}`)
      const cycle = await call(a.base, "POST", `/v1/admin/plans/${plan.body.data.id}/cycles`, {
        token: adminToken,
        body: { name: "Monthly", duration_days: 30, price: "5.00", currency: "USD" }
      })
      if (cycle.status !== 201) throw new Error(`cycle: ${cycle.status} ${cycle.text}`)
      return { id: plan.body.data.id as number, cycle: cycle.body.data.id as number }
    }
    const plan = await planOf("Failover plan")
    // a node agent on B's push stream: a device deleted through A must reach it after each event
    nodeAgent = await startNodeAgent({ dir: HA, writer: a, streamer: b, adminToken, plan, log, problems })
    await nodeAgent.removalReaches("before the events")
    const load = runLoad(servers, plan)
    await Bun.sleep(3000)

    /** after each event: a plan created through A reaches both instances' GET /v1/plans */
    const planReachesBoth = async (name: string) => {
      let created: { id: number } | undefined
      await waitFor(
        `${name}: a plan created`,
        async () => {
          try {
            created = await planOf(`After ${name}`)
            return true
          } catch {
            return false
          }
        },
        20_000
      )
      const ms = await waitFor(
        `${name}: the new plan on both instances`,
        async () => {
          for (const s of servers) {
            const list = await call(s.base, "GET", "/v1/plans")
            if (list.status !== 200 || !(list.body.data as Array<{ id: number }>).some((p) => p.id === created!.id)) return false
          }
          return true
        },
        5000
      )
      log(`${name}: a plan created after it reached both instances in ${ms.toFixed(0)} ms`)
    }

    await event("switchover", servers, async () => {
      const from = await leader()
      const to = await syncStandby()
      const out = Bun.spawnSync(["patronictl", "-c", join(HA, "pg1.yml"), "switchover", "--leader", from!.name, "--candidate", to!.name, "--force"])
      if (out.exitCode !== 0) problems.push(`switchover: ${out.stderr.toString()}`)
      await waitFor("the switchover", async () => (await leader())?.name === to!.name, 30_000).catch((e) => problems.push(String(e)))
    })
    await planReachesBoth("switchover")
    await nodeAgent.removalReaches("switchover")

    await event("kill -9 of the primary's postmaster", servers, async () => {
      const primary = (await leader())!
      process.kill(await postmasterPid(primary), "SIGKILL")
      await Bun.sleep(500)
    })
    await planReachesBoth("postmaster kill")
    await nodeAgent.removalReaches("postmaster kill")

    await event("loss of the primary's node", servers, async () => {
      const primary = (await leader())!
      const pid = await postmasterPid(primary)
      const patroni = patronis.get(primary.name)!
      patroni.kill("SIGKILL")
      await patroni.exited
      process.kill(pid, "SIGKILL")
      await waitFor(
        "a new leader",
        async () => {
          const now = await leader()
          return now !== undefined && now.name !== primary.name
        },
        45_000
      ).catch((e) => problems.push(String(e)))
      // the lost node comes back as a replica
      startPatroni(primary)
    })
    await planReachesBoth("node loss")
    await nodeAgent.removalReaches("node loss")

    loadRunning = false
    await load

    // nothing acknowledged is lost
    const users = await onPrimary<{ email: string }>("select email from users where email = any($1)", [acknowledgedUsers])
    const invoices = await onPrimary<{ uuid: string }>("select uuid::text as uuid from invoices where uuid::text = any($1)", [acknowledgedInvoices])
    const lostUsers = acknowledgedUsers.length - new Set(users.map((u) => u.email)).size
    const lostInvoices = acknowledgedInvoices.length - new Set(invoices.map((i) => i.uuid)).size
    const total = acknowledgedUsers.length + acknowledgedInvoices.length
    log(
      `requests ${outcomes.length}: ${outcomes.filter((o) => o.status === 503).length} x 503, ` +
        `${outcomes.filter((o) => o.status >= 500 && o.status !== 503).length} other 5xx`
    )
    log(`acknowledged ${total} (${acknowledgedUsers.length} registrations, ${acknowledgedInvoices.length} orders), lost ${lostUsers + lostInvoices}`)
    if (lostUsers + lostInvoices > 0) problems.push(`lost ${lostUsers} registrations and ${lostInvoices} orders`)
    // the reads that may lag come from the replicas (DATABASE_READ_URL): after the three events
    // they list every acknowledged registration, on both instances
    try {
      const ms = await waitFor(
        "the admin list on the replicas",
        async () => {
          for (const s of servers) {
            const list = await call(s.base, "GET", "/v1/admin/users?email=failover.", { token: adminToken })
            if (list.status !== 200 || list.body.meta.total < acknowledgedUsers.length) return false
          }
          return true
        },
        10_000
      )
      log(`the admin list read on the replicas showed all ${acknowledgedUsers.length} registrations after ${ms.toFixed(0)} ms`)
    } catch (e) {
      problems.push((e as Error).message)
    }
    for (const [i, s] of servers.entries()) {
      const status = await call(s.base, "GET", "/v1/status")
      if (status.status !== 200) problems.push(`instance ${i} does not answer 200 on /v1/status at the end (${status.status})`)
    }
  } finally {
    loadRunning = false
    await nodeAgent?.stop()
    const codes = await Promise.all(servers.map((s) => s.stop()))
    log(`instances stopped: exit codes ${codes.join(", ")}`)
    if (problems.length > 0) {
      for (const s of servers)
        console.log(
          s
            .output()
            .split("\n")
            .filter((l) => /level=(ERROR|WARN)/.test(l))
            .slice(-20)
            .join("\n")
        )
    }
  }
}

try {
  await main()
} catch (e) {
  problems.push(`failed: ${(e as Error).stack ?? e}`)
}
for (const child of children) if (child.exitCode === null) child.kill("SIGTERM")
if (problems.length > 0) {
  console.log(`[failover] FAILED:\n- ${[...new Set(problems)].join("\n- ")}`)
  process.exit(1)
}
log("passed")
process.exit(0)
