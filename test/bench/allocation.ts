/**
 * [D90] allocation scenario (issue 15): the cost of a first WireGuard download (which allocates the
 * lowest free address) on a server that already has 10 peers, and on one with 60 000 peers.
 * Peers are seeded with plain SQL; each sample is a fresh user's first download through the real
 * API (in process, on the test database: PGlite, or PostgreSQL with TEST_DATABASE_URL).
 *
 *   bun run test/bench/allocation.ts            # SAMPLES=40 by default
 */
import { makeTestApp } from "../support/app.ts"
import { makePlan, makeServer, makeService } from "../vpn/fixtures.ts"

const SAMPLES = Number(process.env.SAMPLES ?? 40)
const app = await makeTestApp()

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!

const scenario = async (peers: number) => {
  const plan = await makePlan(app)
  const server = await makeServer(app, { planIds: [plan.planId], subnet: "10.0.0.0/8" })
  const owner = await app.createUser()
  await app.sql`
    insert into vpn_devices (user_id, name, platform) select ${owner.id}, 'seed ' || g, 'other' from generate_series(1, ${peers}) g`
  await app.sql`
    insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address, host)
    select ${owner.id}, d.id, ${server.id}, 'seed-' || d.id || '-' || ${server.id}, 'v1:seed',
           '10.0.0.0'::inet + (row_number() over (order by d.id) + 1), row_number() over (order by d.id) + 1
    from vpn_devices d where d.user_id = ${owner.id}`
  await app.sql`update servers set next_host = ${peers + 2} where id = ${server.id}`
  const times: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const started = performance.now()
    const res = await app.get(`/v1/servers/${server.id}/wireguard`, { token: user.token })
    times.push(performance.now() - started)
    if (res.status !== 200) throw new Error(`download: ${res.status} ${res.text}`)
  }
  const [count] = await app.sql<{ n: number }>`select count(*)::int as n from wireguard_peers where server_id = ${server.id}`
  times.sort((a, b) => a - b)
  return { peers, total: count!.n, median: percentile(times, 50), p99: percentile(times, 99) }
}

// one warm-up download so the first scenario does not pay for the first request of the process
await scenario(1).catch(() => undefined)
for (const size of [10, 60_000]) {
  const r = await scenario(size)
  console.log(
    `first download at ${String(r.peers).padStart(6)} peers: median ${r.median.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms (${SAMPLES} samples; ${r.total} peers after)`
  )
}
await app.dispose()
process.exit(0)
