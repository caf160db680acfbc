import { sha256Hex } from "../../src/platform/Crypto.ts"
import type { TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

/** A WireGuard server key (base64 of 32 bytes). */
export const SERVER_PUBLIC_KEY = "x1QmZ3bBR6dHqQ4k3rHcA1FqJ1cB0wzZ2yQy8V8h0mE="
export const DAY = 86_400_000
export const GIB = 1024 ** 3

let counter = 0

/** A plan with one monthly cycle; `limitGb` 0 is unlimited. */
export const makePlan = async (app: TestApp, limitGb = 100) => {
  const [plan] = await app.sql<{ id: number }>`
    insert into plans (name, description, bandwidth_limit_gb) values (${`Plan ${++counter}`}, 'test', ${limitGb}) returning id`
  const [cycle] = await app.sql<{ id: number }>`
    insert into billing_cycles (plan_id, name, duration_days, price, currency) values (${plan!.id}, 'Monthly', 30, '9.99', 'USD') returning id`
  return { planId: plan!.id, cycleId: cycle!.id }
}

export const makeService = async (
  app: TestApp,
  userId: number,
  plan: { readonly planId: number; readonly cycleId: number },
  options: { readonly status?: string; readonly expiresAt?: Date; readonly createdAt?: Date } = {}
) => {
  const now = app.clock.get()
  const [row] = await app.sql<{ id: number }>`
    insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, created_at)
    values (${userId}, ${plan.planId}, ${plan.cycleId}, ${options.status ?? "active"}, ${new Date(now.getTime() - DAY)},
            ${options.expiresAt ?? new Date(now.getTime() + 30 * DAY)}, ${options.createdAt ?? now})
    returning id`
  return row!.id
}

export const makeServer = async (
  app: TestApp,
  options: {
    readonly protocol?: "wireguard" | "openvpn"
    readonly name?: string
    readonly planIds?: ReadonlyArray<number>
    readonly subnet?: string
    readonly caCert?: string
    readonly transport?: "udp" | "tcp"
    readonly ip?: string
    readonly port?: number
  } = {}
) => {
  const protocol = options.protocol ?? "wireguard"
  const nodeToken = `node_test_${++counter}_${"t".repeat(30)}`
  const [row] = await app.sql<{ id: number }>`
    insert into servers (name, country, city, protocol, ip, port, transport, public_key, subnet, ca_cert, node_token_hash)
    values (${options.name ?? `Server ${counter}`}, 'NL', 'Amsterdam', ${protocol}, ${options.ip ?? "198.51.100.10"},
            ${options.port ?? (protocol === "wireguard" ? 51820 : 1194)}, ${options.transport ?? "udp"},
            ${protocol === "wireguard" ? SERVER_PUBLIC_KEY : null}, ${options.subnet ?? "10.66.0.0/16"}::cidr,
            ${options.caCert ?? (protocol === "openvpn" ? "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----" : null)},
            ${sha256Hex(nodeToken)})
    returning id`
  for (const planId of options.planIds ?? []) {
    await app.sql`insert into server_plans (server_id, plan_id) values (${row!.id}, ${planId})`
  }
  return { id: row!.id, nodeToken }
}

/** Sets a month's usage of a service (`period` is `YYYY-MM`). */
export const setUsage = async (app: TestApp, serviceId: number, period: string, rx: number, tx = 0) => {
  await app.sql`
    insert into usage_records (service_id, period, rx_bytes, tx_bytes) values (${serviceId}, ${`${period}-01`}::date, ${rx}, ${tx})
    on conflict (service_id, period) do update set rx_bytes = excluded.rx_bytes, tx_bytes = excluded.tx_bytes`
}

/** A user with an active service on a fresh plan that grants a fresh server. */
export const subscriber = async (
  app: TestApp,
  options: { readonly limitGb?: number; readonly protocol?: "wireguard" | "openvpn"; readonly status?: string } = {}
) => {
  const user = await app.createUser()
  const plan = await makePlan(app, options.limitGb ?? 100)
  const serviceId = await makeService(app, user.id, plan, options.status ? { status: options.status } : {})
  const server = await makeServer(app, { protocol: options.protocol ?? "wireguard", planIds: [plan.planId] })
  return { user, plan, serviceId, server }
}

/** A user with a service granting a WireGuard and an OpenVPN server, a downloaded peer and credentials. */
export const vpnMember = async (app: TestApp) => {
  const user = await app.createUser()
  const plan = await makePlan(app)
  await makeService(app, user.id, plan)
  const wg = await makeServer(app, { planIds: [plan.planId] })
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
  const me = await typedClient(app, { token: user.token })
  const conf = await ok(me.vpn.wireguard({ path: { server: wg.id } }))
  const creds = await ok(me.vpn.vpnCredentials())
  return { user, wg, ovpn, conf, username: creds.username, secret: creds.password }
}

/** The node's peer list ([D54]). */
export const nodePeersOf = async (app: TestApp, nodeToken: string) => {
  const node = await typedClient(app, { token: nodeToken })
  const answer = await ok(node.node.peers({ urlParams: {} }))
  return answer.data as Array<{ public_key: string; allowed_ips: string; enabled: boolean; speed_limit_mbps: number | null }>
}

/** The node's auth-user-pass check ([D54]). */
export const openvpnAuthOf = (app: TestApp, nodeToken: string, username: string, password: string) =>
  app.post("/v1/node/openvpn/auth", { token: nodeToken, body: { username, password } })
