import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { RecipientsLive } from "../../src/accounts/Contacts.ts"
import { Access, NODE_LIST_PAGE } from "../../src/vpn/Access.ts"
import { NodeSyncResponse } from "../../src/vpn/NodeApi.ts"
import { DomainEventsLive } from "../../src/webhooks/Webhooks.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { GIB, makeServer } from "./fixtures.ts"
import { ServerId } from "../../src/platform/Ids.ts"

// Issue 27: the full node list (`GET /v1/node/peers` without `since`) is streamed, pages of
// peers in key order, and its bytes are exactly what the old builder answered: `Access.nodeSync`
// (still the code of `?since=` and of the RPC stream) encoded through the route's schema, as
// `HttpApi` writes it. The seeded set covers [D54] (enabled or not: no service, a suspended one,
// access on hold [D91]), [D95]/[D104] (over the quota of a `suspend` plan and of a `throttle` one),
// [D103] (plan speeds, throttle speeds, the lower of both), [D90] (IPv6 addresses) and [D106] (an
// OpenVPN server's credentials).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const USERS = 2 * NODE_LIST_PAGE + 317

/** the answer of the old builder: `nodeSync` without `since`, encoded as the route's schema encodes it */
const oldAnswer = (serverId: number) =>
  app.run(
    Effect.flatMap(Access, (access) => access.nodeSync(ServerId.make(serverId), undefined)).pipe(
      Effect.map((sync) => JSON.stringify(Schema.encodeSync(NodeSyncResponse)({ data: sync.peers, meta: { revision: sync.revision } }))),
      Effect.provide(Access.Default.pipe(Layer.provide(Layer.mergeAll(DomainEventsLive, RecipientsLive))))
    )
  )

/** the streamed answer, as its chunks arrive */
const streamed = async (nodeToken: string) => {
  const response = await app.fetch(
    new Request("http://localhost:3000/v1/node/peers", {
      headers: { authorization: `Bearer ${nodeToken}`, accept: "application/json" }
    })
  )
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let chunks = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    chunks += 1
    text += decoder.decode(value, { stream: true })
  }
  return { status: response.status, headers: response.headers, text: text + decoder.decode(), chunks }
}

let wg: { id: number; nodeToken: string }
let wg4: { id: number; nodeToken: string }
let ovpn: { id: number; nodeToken: string }
let empty: { id: number; nodeToken: string }

beforeAll(async () => {
  const month = `${app.clock.get().toISOString().slice(0, 7)}-01`
  // six plans: plain; 50 Mbps; suspend at 1 GB; throttle at 1 GB to 2 Mbps under a 10 Mbps limit;
  // throttle to 20 Mbps under a 5 Mbps limit (the lower stays); throttle with no plan limit
  const plans = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, quota_action, throttle_mbps)
    values ('S plain', 't', 100, null, 'suspend', null), ('S fast', 't', 0, 50, 'suspend', null),
           ('S cut', 't', 1, null, 'suspend', null), ('S slow', 't', 1, 10, 'throttle', 2),
           ('S low', 't', 1, 5, 'throttle', 20), ('S open', 't', 1, null, 'throttle', 3)
    returning id`
  const planIds = plans.map((p) => p.id)
  await app.sql`
    insert into billing_cycles (plan_id, name, duration_days, price, currency)
    select (p.value)::int, 'Monthly', 30, '9.99', 'USD' from jsonb_array_elements_text(${JSON.stringify(planIds)}::jsonb) p`
  wg = await makeServer(app, { planIds, subnet: "10.80.0.0/16" })
  await app.sql`update servers set subnet6 = 'fd42:80::/64'::cidr where id = ${wg.id}`
  wg4 = await makeServer(app, { planIds: planIds.slice(0, 3), subnet: "10.81.0.0/16" })
  ovpn = await makeServer(app, { protocol: "openvpn", planIds: planIds.slice(1) })
  empty = await makeServer(app, { planIds, subnet: "10.82.0.0/16" })
  const first = (await app.sql<{ id: number }>`select coalesce(max(id), 0) + 1 as id from users`)[0]!.id
  await app.sql`
    insert into users (name, email, password_hash)
    select 'Node list ' || k, 'nodelist' || k || '@example.com', 'x' from generate_series(1, ${USERS}) k`
  // users k: every 11th without a service, every 7th suspended, the plans in turn; every 13th on hold
  await app.sql`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at)
    select u.id, c.plan_id, c.id, case when k % 7 = 0 then 'suspended' else 'active' end,
           ${new Date(app.clock.get().getTime() - 86_400_000)}, ${new Date(app.clock.get().getTime() + 30 * 86_400_000)}
    from generate_series(1, ${USERS}) k
    join users u on u.email = 'nodelist' || k || '@example.com'
    join billing_cycles c on c.plan_id = (${JSON.stringify(planIds)}::jsonb ->> (k % 6))::int
    where k % 11 <> 0`
  // [D34]: the newest service is the current one, then its status and plan count: every 17th
  // (from the 3rd) gets a newer suspended one over its active one (not enabled anywhere), every
  // 19th (from the 4th) a newer active one on the last plan (granted to wg, not to wg4)
  await app.sql`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, created_at)
    select u.id, c.plan_id, c.id, case when k % 17 = 3 then 'suspended' else 'active' end,
           ${new Date(app.clock.get().getTime() - 86_400_000)}, ${new Date(app.clock.get().getTime() + 30 * 86_400_000)},
           now() + interval '1 minute'
    from generate_series(1, ${USERS}) k
    join users u on u.email = 'nodelist' || k || '@example.com'
    join billing_cycles c on c.plan_id = case when k % 17 = 3 then ${planIds[0]!}::int else ${planIds[5]!}::int end
    where k % 11 <> 0 and (k % 17 = 3 or k % 19 = 4)`
  await app.sql`insert into vpn_access_holds (user_id) select id from users where id >= ${first} and (id - ${first}) % 13 = 5`
  // every other service over 1 GB this month (over the quota of the 1 GB plans)
  await app.sql`
    insert into usage_records (service_id, period, rx_bytes, tx_bytes)
    select s.id, ${month}::date, ${2 * GIB}, 0 from services s where s.user_id >= ${first} and s.id % 2 = 0`
  await app.sql`
    insert into vpn_devices (user_id, name, platform) select id, 'Default', 'other' from users where id >= ${first}`
  await app.sql`
    insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address)
    select d.user_id, d.id, ${wg.id}, 'NL' || lpad(d.user_id::text, 41, '0') || '=', 'v1:none', '10.80.0.2'::inet + (d.user_id - ${first})
    from vpn_devices d where d.user_id >= ${first}`
  await app.sql`
    insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address)
    select d.user_id, d.id, ${wg4.id}, 'NM' || lpad(d.user_id::text, 41, '0') || '=', 'v1:none', '10.81.0.2'::inet + (d.user_id - ${first})
    from vpn_devices d where d.user_id >= ${first} and (d.user_id - ${first}) % 3 = 0`
  await app.sql`select vpn_reindex_hosts(id) from servers where id in (${wg.id}, ${wg4.id})`
  await app.sql`
    insert into vpn_credentials (user_id, device_id, username, secret_enc, secret_hash)
    select d.user_id, d.id, 'nl' || d.user_id, 'v1:none', 'none' from vpn_devices d
    where d.user_id >= ${first} and (d.user_id - ${first}) % 4 = 1`
}, 60_000)

describe("the full node list, streamed (issue 27)", () => {
  test("a WireGuard server's list over several pages: the old builder's bytes, written in pieces", async () => {
    const before = await oldAnswer(wg.id)
    const got = await streamed(wg.nodeToken)
    expect(got.status).toBe(200)
    expect(got.headers.get("content-type")).toBe("application/json")
    expect(got.text).toBe(before)
    // every case is in the set: disabled, throttled speeds, the lower of both, plan speeds, IPv6
    const data = JSON.parse(got.text).data as Array<{ enabled: boolean; speed_limit_mbps: number | null; allowed_ips: string }>
    expect(data.length).toBe(USERS)
    const speeds = new Set(data.filter((e) => e.enabled).map((e) => e.speed_limit_mbps))
    expect([...speeds].sort()).toEqual([10, 2, 3, 5, 50, null].sort())
    expect(data.some((e) => !e.enabled)).toBe(true)
    expect(data.every((e) => / fd42:80::[0-9a-f]+\/128$/.test(e.allowed_ips))).toBe(true)
    // [D34]: a newer suspended service over an active one: not enabled
    const newerSuspended = await app.sql<{ key: string }>`
      select p.public_key as key from wireguard_peers p join services s on s.user_id = p.user_id
      where p.server_id = ${wg.id} and s.status = 'suspended' and s.created_at > now()`
    expect(newerSuspended.length).toBeGreaterThan(50)
    const byKey = new Map((JSON.parse(got.text).data as Array<{ public_key: string; enabled: boolean }>).map((e) => [e.public_key, e.enabled]))
    expect(newerSuspended.every((r) => byKey.get(r.key) === false)).toBe(true)
    // the header, a piece per page of peers, the revision: not one body built whole
    expect(got.chunks).toBeGreaterThanOrEqual(Math.ceil(USERS / NODE_LIST_PAGE) + 2)
  }, 30_000)

  test("an IPv4-only server, an OpenVPN server ([D106]) and a server with no peers: the old builder's bytes", async () => {
    for (const server of [wg4, ovpn, empty]) {
      const before = await oldAnswer(server.id)
      const got = await streamed(server.nodeToken)
      expect(got.status).toBe(200)
      expect(got.text).toBe(before)
    }
    // [D34]: a newer active service on a plan wg4 is not granted: not enabled there, whatever the older one
    const newerElsewhere = await app.sql<{ key: string }>`
      select p.public_key as key from wireguard_peers p join services s on s.user_id = p.user_id
      where p.server_id = ${wg4.id} and s.status = 'active' and s.created_at > now()
        and not exists (select 1 from vpn_access_holds h where h.user_id = p.user_id)`
    expect(newerElsewhere.length).toBeGreaterThan(10)
    const wg4Entries = JSON.parse((await streamed(wg4.nodeToken)).text).data as Array<{ public_key: string; enabled: boolean }>
    const wg4Enabled = new Map(wg4Entries.map((e) => [e.public_key, e.enabled]))
    expect(newerElsewhere.every((r) => wg4Enabled.get(r.key) === false)).toBe(true)
    expect(JSON.parse((await streamed(empty.nodeToken)).text).data).toEqual([])
    const credentials = JSON.parse((await streamed(ovpn.nodeToken)).text).data as Array<{ username: string; enabled: boolean }>
    expect(credentials.length).toBeGreaterThan(100)
    expect(new Set(credentials.map((c) => c.enabled))).toEqual(new Set([true, false]))
  }, 30_000)

  test("`?since=` of the streamed revision answers nothing changed [D92]; an unknown token is still 401", async () => {
    const full = JSON.parse((await streamed(wg.nodeToken)).text) as { meta: { revision: number } }
    const node = await typedClient(app, { token: wg.nodeToken })
    const since = await ok(node.node.peers({ urlParams: { since: String(full.meta.revision) } }))
    expect(since).toEqual({ data: [], meta: { revision: full.meta.revision } })
    expect((await app.get("/v1/node/peers", { token: `node_unknown_${"t".repeat(30)}` })).status).toBe(401)
  })
})
