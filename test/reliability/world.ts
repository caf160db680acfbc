import { sha256Hex } from "../../src/platform/Crypto.ts"
import type { TestApp } from "../support/app.ts"

/**
 * A world of two users for the access-control matrix (issue 9, suite 2): A and B each own a
 * service, invoices, a ticket with a reply, usage, a WireGuard peer and VPN credentials, on
 * different plans. Servers: one shared by both plans, a WireGuard and an OpenVPN server only
 * B's plan grants, an OpenVPN server only A's plan grants. B's rows carry markers that must
 * never appear in anything A can read.
 */

export const DAY = 86_400_000
const SERVER_KEY = "x1QmZ3bBR6dHqQ4k3rHcA1FqJ1cB0wzZ2yQy8V8h0mE="
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"

export interface Owner {
  readonly id: number
  readonly email: string
  readonly token: string
  readonly planId: number
  readonly cycleId: number
  readonly serviceId: number
  readonly invoiceUuids: ReadonlyArray<string>
  readonly ticketId: number
}

const insertServer = async (app: TestApp, name: string, protocol: "wireguard" | "openvpn", planIds: ReadonlyArray<number>) => {
  const nodeToken = `node_${name.toLowerCase().replace(/[^a-z0-9]/g, "")}_${"w".repeat(32)}`
  const [row] = await app.sql<{ id: number }>`
    insert into servers (name, country, city, protocol, ip, port, public_key, ca_cert, node_token_hash)
    values (${name}, 'NL', 'Amsterdam', ${protocol}, '198.51.100.20', ${protocol === "wireguard" ? 51820 : 1194},
            ${protocol === "wireguard" ? SERVER_KEY : null}, ${protocol === "openvpn" ? CA : null}, ${sha256Hex(nodeToken)})
    returning id`
  for (const planId of planIds) await app.sql`insert into server_plans (server_id, plan_id) values (${row!.id}, ${planId})`
  return { id: row!.id, nodeToken }
}

const owner = async (app: TestApp, tag: string, marker: string, usageBytes: number): Promise<Owner> => {
  const user = await app.createUser({ email: `${tag}-${marker.toLowerCase()}@example.com`, name: `Name ${marker}` })
  const [plan] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb) values (${`Plan ${marker}`}, 'access matrix', 100) returning id`
  const [cycle] = await app.sql<{ id: number }>`
    insert into billing_cycles (plan_id, name, duration_days, price, currency)
    values (${plan!.id}, ${`Cycle ${marker}`}, 30, '9.99', 'USD') returning id`
  const now = app.clock.get()
  const [service] = await app.sql<{ id: number }>`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
    values (${user.id}, ${plan!.id}, ${cycle!.id}, 'active', ${new Date(now.getTime() - 40 * DAY)}, ${new Date(now.getTime() + 20 * DAY)}, true,
            ${new Date(now.getTime() - 40 * DAY)})
    returning id`
  const invoices = await app.sql<{ uuid: string }>`
    insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, due_date, paid_at, transaction_id, created_at)
    values (${user.id}, ${service!.id}, ${plan!.id}, ${cycle!.id}, '9.99', 'USD', 'pending', ${new Date(now.getTime() + 7 * DAY)}, null, null, ${now}),
           (${user.id}, ${service!.id}, ${plan!.id}, ${cycle!.id}, '9.99', 'USD', 'paid', ${new Date(now.getTime() - 33 * DAY)},
            ${new Date(now.getTime() - 40 * DAY)}, ${`tx-${marker}`}, ${new Date(now.getTime() - 40 * DAY)})
    returning uuid::text as uuid`
  const [ticket] = await app.sql<{ id: number }>`
    insert into tickets (user_id, subject) values (${user.id}, ${`Subject ${marker}`}) returning id`
  await app.sql`insert into ticket_replies (ticket_id, author_id, message) values (${ticket!.id}, ${user.id}, ${`Message ${marker}`})`
  // usage in this month and the previous one
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  const previous = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1))
  await app.sql`insert into usage_records (service_id, period, rx_bytes, tx_bytes)
    values (${service!.id}, ${month.toISOString().slice(0, 10)}::date, ${usageBytes}, 0),
           (${service!.id}, ${previous.toISOString().slice(0, 10)}::date, ${usageBytes * 2}, 7)`
  return {
    id: user.id,
    email: user.email,
    token: user.token,
    planId: plan!.id,
    cycleId: cycle!.id,
    serviceId: service!.id,
    invoiceUuids: invoices.map((i) => i.uuid),
    ticketId: ticket!.id
  }
}

export const seedWorld = async (app: TestApp) => {
  const a = await owner(app, "alice", "ALICEMARK", 111_111_111)
  const b = await owner(app, "bob", "BOBMARK", 987_654_321)
  const admin = await app.createUser({ email: "access-admin@example.com", role: "admin" })
  const shared = await insertServer(app, "Shared WG", "wireguard", [a.planId, b.planId])
  const bWireguard = await insertServer(app, "BOBMARK WG", "wireguard", [b.planId])
  const bOpenvpn = await insertServer(app, "BOBMARK OVPN", "openvpn", [b.planId])
  const aOpenvpn = await insertServer(app, "ALICEMARK OVPN", "openvpn", [a.planId])
  // peers and VPN credentials through the API, so their rows are the service's own
  for (const [token, server] of [
    [a.token, shared.id],
    [b.token, shared.id],
    [b.token, bWireguard.id]
  ] as const) {
    const res = await app.get(`/v1/servers/${server}/wireguard`, { token })
    if (res.status !== 200) throw new Error(`world: wireguard download ${res.status} ${res.text}`)
  }
  for (const token of [a.token, b.token]) {
    const res = await app.get("/v1/account/vpn-credentials", { token })
    if (res.status !== 200) throw new Error(`world: vpn credentials ${res.status} ${res.text}`)
  }
  const bPeers = await app.sql<{ public_key: string; address: string }>`
    select public_key, host(address) as address from wireguard_peers where user_id = ${b.id}`
  const [bCredentials] = await app.sql<{ username: string }>`select username from vpn_credentials where user_id = ${b.id}`
  /** strings of B's that nothing A reads may contain */
  const bMarkers = ["BOBMARK", b.email, ...b.invoiceUuids, "tx-BOBMARK", "987654321", "1975308649", ...bPeers.map((p) => p.public_key), bCredentials!.username]
  // the Default devices the downloads made ([D90])
  const deviceOf = async (userId: number) =>
    (await app.sql<{ id: number }>`select id from vpn_devices where user_id = ${userId} order by created_at, id limit 1`)[0]!.id
  return {
    a,
    b,
    devices: { a: await deviceOf(a.id), b: await deviceOf(b.id) },
    admin,
    servers: { shared, bWireguard, bOpenvpn, aOpenvpn },
    bMarkers
  }
}

export type World = Awaited<ReturnType<typeof seedWorld>>
