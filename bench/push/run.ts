/**
 * [D105] push bound: two API instances on one PostgreSQL, 20 node agents connected (simulated:
 * clients of the API's own `RpcGroup`, 10 on each instance, one per VPN server), 50 revocations
 * (an admin disables a user who has a peer on every server): for each, the time from sending
 * the admin's request (so an upper bound of the commit) until every agent holds the change (a
 * batch with that user's key `enabled: false` on its server). Prints the figures; target p99 < 1 s.
 *
 *   npm run bench:push            (starts its own PostgreSQL 15 like scripts/with-postgres.sh)
 *   AGENTS=20 REVOCATIONS=50 GAP_MS=100 npm run bench:push
 */
import { FetchHttpClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { RpcClient, RpcSerialization } from "@effect/rpc"
import { Effect, Fiber, Layer, Stream } from "effect"
import { createHash } from "node:crypto"
import pg from "pg"
import { NodeRpcs } from "../../src/vpn/NodeProtocol.ts"
import { startPostgres } from "../lib/postgres.ts"
import { type Server as Instance, startServer } from "../lib/server.ts"

const startServerInherit = (env: Record<string, string>) => startServer(env, { stderr: "inherit" })

const AGENTS = Number(process.env.AGENTS ?? 20)
const REVOCATIONS = Number(process.env.REVOCATIONS ?? 50)
const GAP_MS = Number(process.env.GAP_MS ?? 100)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex")

/** one simulated agent: WatchPeers on `base`, recording when each disabled key arrives */
const agent = (base: string, token: string, seen: Map<string, number>) =>
  Effect.runFork(
    Effect.gen(function* () {
      const client = yield* RpcClient.make(NodeRpcs)
      yield* client.WatchPeers({ since: null }).pipe(
        Stream.runForEach((batch) =>
          Effect.sync(() => {
            const at = performance.now()
            for (const p of batch.peers) {
              if ("public_key" in p && "enabled" in p && !p.enabled && !seen.has(p.public_key)) seen.set(p.public_key, at)
            }
          })
        )
      )
    }).pipe(
      Effect.scoped,
      Effect.provide(
        RpcClient.layerProtocolHttp({
          url: `${base}/v1/node/rpc`,
          transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
        }).pipe(Layer.provide(FetchHttpClient.layer), Layer.provide(RpcSerialization.layerNdjson))
      ),
      Effect.catchAllCause((cause) => Effect.sync(() => console.error(`agent on ${base} failed`, cause)))
    )
  )

const quantile = (sorted: ReadonlyArray<number>, q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

const main = async () => {
  const pgServer = startPostgres()
  const instances: Array<Instance> = []
  try {
    const env = {
      DATABASE_URL: pgServer.url,
      APP_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64"),
      PUBLIC_URL: "http://bench.example",
      HOST: "127.0.0.1",
      GENERAL_RATE_LIMIT: "0",
      LOG_LEVEL: "warn",
      ADMIN_EMAIL: "admin@bench.example",
      ADMIN_PASSWORD: "bench-admin-password-1234",
      ADMIN_REQUIRE_2FA: "false"
    }
    instances.push(await startServerInherit(env)) // migrates
    instances.push(await startServerInherit(env))

    // seed: one plan granting AGENTS servers; REVOCATIONS users with an active service and a peer on each server
    const db = new pg.Client({ connectionString: pgServer.url })
    await db.connect()
    const plan = (await db.query(`insert into plans (name, description, bandwidth_limit_gb) values ('Bench', 'bench', 0) returning id`)).rows[0].id
    const cycle = (
      await db.query(`insert into billing_cycles (plan_id, name, duration_days, price, currency) values ($1, 'Monthly', 30, '9.99', 'USD') returning id`, [
        plan
      ])
    ).rows[0].id
    const servers: Array<{ id: number; token: string }> = []
    for (let s = 0; s < AGENTS; s++) {
      const token = `node_bench_${s}_${crypto.randomUUID()}`
      const id = (
        await db.query(
          `insert into servers (name, country, city, protocol, ip, port, transport, public_key, subnet, node_token_hash)
         values ($1, 'NL', 'Amsterdam', 'wireguard', '198.51.100.10', 51820, 'udp', 'x1QmZ3bBR6dHqQ4k3rHcA1FqJ1cB0wzZ2yQy8V8h0mE=', '10.66.0.0/16', $2)
         returning id`,
          [`bench-${s}`, sha256(token)]
        )
      ).rows[0].id
      await db.query(`insert into server_plans (server_id, plan_id) values ($1, $2)`, [id, plan])
      servers.push({ id, token })
    }
    const users: Array<{ id: number; keys: Array<string> }> = []
    for (let u = 0; u < REVOCATIONS; u++) {
      const id = (await db.query(`insert into users (name, email, password_hash) values ($1, $2, 'x') returning id`, [`User ${u}`, `user${u}@bench.example`]))
        .rows[0].id
      await db.query(
        `insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at)
         values ($1, $2, $3, 'active', now() - interval '1 day', now() + interval '30 days')`,
        [id, plan, cycle]
      )
      const keys: Array<string> = []
      for (const server of servers) {
        const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")
        await db.query(
          `insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address, host)
           values ($1, $2, $3, 'v1:bench', $4::inet, $5)`,
          [id, server.id, key, `10.66.${Math.floor((u + 2) / 256)}.${(u + 2) % 256}`, u + 2]
        )
        keys.push(key)
      }
      users.push({ id, keys })
    }
    await db.end()

    const login = await fetch(`${instances[0]!.base}/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: env.ADMIN_EMAIL, password: env.ADMIN_PASSWORD })
    })
    const adminToken = ((await login.json()) as { data: { token: string } }).data.token

    // the agents: half on each instance
    const seen = servers.map(() => new Map<string, number>())
    const fibers = servers.map((server, i) => agent(instances[i % 2]!.base, server.token, seen[i]!))
    await sleep(2000)

    // the revocations, alternately through each instance
    const sent: Array<number> = []
    for (const [u, user] of users.entries()) {
      const started = performance.now()
      const res = await fetch(`${instances[u % 2]!.base}/v1/admin/users/${user.id}`, {
        method: "PUT",
        headers: { "content-type": "application/json", authorization: `Bearer ${adminToken}` },
        body: JSON.stringify({ status: 0 })
      })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`revocation ${u}: HTTP ${res.status}`)
      sent.push(started)
      await sleep(GAP_MS)
    }
    const deadline = performance.now() + 10_000
    const complete = () => users.every((user) => user.keys.every((key, s) => seen[s]!.has(key)))
    while (!complete() && performance.now() < deadline) await sleep(50)

    const latencies: Array<number> = []
    let missing = 0
    for (const [u, user] of users.entries()) {
      const arrivals = user.keys.map((key, s) => seen[s]!.get(key))
      if (arrivals.some((a) => a === undefined)) {
        missing++
        continue
      }
      latencies.push(Math.max(...(arrivals as Array<number>)) - sent[u]!)
    }
    latencies.sort((a, b) => a - b)
    const f = (n: number) => `${n.toFixed(1)} ms`
    console.log(
      `push bound [D105]: ${instances.length} API instances on one PostgreSQL (${pgServer.version}), ${AGENTS} agents, ${REVOCATIONS} revocations ${GAP_MS} ms apart`
    )
    console.log(`request sent -> every agent holds the change: n=${latencies.length} missing=${missing}`)
    if (latencies.length > 0) {
      console.log(
        `  min ${f(latencies[0]!)}  p50 ${f(quantile(latencies, 0.5))}  p95 ${f(quantile(latencies, 0.95))}  p99 ${f(quantile(latencies, 0.99))}  max ${f(latencies.at(-1)!)}`
      )
      console.log(quantile(latencies, 0.99) < 1000 && missing === 0 ? "target p99 < 1 s: met" : "target p99 < 1 s: NOT met")
    }
    for (const fiber of fibers) await Effect.runPromise(Fiber.interrupt(fiber))
  } finally {
    for (const i of instances) i.proc.kill("SIGTERM")
    await Promise.all(instances.map((i) => Promise.race([i.proc.exited, sleep(15_000)])))
    pgServer.stop()
  }
}

await main()
