import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import { catalogChanged } from "../catalog/CatalogChanges.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppKey, randomToken, sha256Hex } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"

/**
 * A believable catalogue and one demo user for people trying the API (issue 7). Every object
 * is found by its natural key first, so running it twice leaves one copy of everything.
 * Credentials are fixed and printed: this is demo data, never for production.
 */
export const DEMO_ADMIN = { email: "admin@demo.example", password: "Demo-Admin-2026!", name: "Demo Admin" } as const
export const DEMO_USER = { email: "demo@demo.example", password: "Demo-User-2026!", name: "Demo User" } as const

/** A self-signed demo CA (public, demo only) so OpenVPN profiles parse. */
const DEMO_CA = `-----BEGIN CERTIFICATE-----
MIIDDTCCAfWgAwIBAgIUUsJVSMcajRq+XPx0nbdE+J+++yIwDQYJKoZIhvcNAQEL
BQAwFjEUMBIGA1UEAwwLRGVtby1WUE4tQ0EwHhcNMjYxMTIxMTcyMjE4WhcNMzYx
MTE4MTcyMjE4WjAWMRQwEgYDVQQDDAtEZW1vLVZQTi1DQTCCASIwDQYJKoZIhvcN
AQEBBQADggEPADCCAQoCggEBAMyz3rjgWdun3o5/TjPB6c/VyBwyCCdx39gyvhed
XybRNopNWid2FhVIn45vwn68HnnW/534VsPwvVO3khosgS8PL+q5sn9uZxFYLuOk
SDHWCOFppW5Jv26WWsmCgH+jrsFiaSmNrLUrO7/JXVnavQE+gRrMAnc4a+8FQExm
DLyeS6YFp1nf7a53thtz6KAySvybM9onARGNMhhvl4LSW7U2XF4PB4v5MeR95Goz
htMGmkWGEenw6RHKdiQFkUHhEpqI4mGLDpRoNV2UXSzRsq8uwa58TOe9V8fCFxis
g6VaG2GPQdrzXxQ35WFYRsNYV2JXgCdFbmf245SfYFgtg9ECAwEAAaNTMFEwHQYD
VR0OBBYEFMeLKyieqlvq6FaylWUE0ZrWTd9iMB8GA1UdIwQYMBaAFMeLKyieqlvq
6FaylWUE0ZrWTd9iMA8GA1UdEwEB/wQFMAMBAf8wDQYJKoZIhvcNAQELBQADggEB
AGbOI5drj118U13kxtJ4MEnXhVxoPzwksK4FPAX79oQj8/b3rFsoQAY913c5V3OQ
UAWgRrSbxyOwTHhH22PCWGD5SHXC6TgbIDhQhW4UZdo+KdBy1O+D4+wIBUjFoGid
r/qqadjUMInwGWS7Q3mCaStNmqwyzjeQSxalw9NQn+8Ns7JyHAgl9yBFFUvlInZx
Y1258ds4tHwtk2dd8eBRKtOJgFNeLgULV4l8HswI2g/SOuWg61N2F7oW0m5/Y5KA
o/yrZc4hwb+f6dtcdsKOHX7IrFr8E7XkS7FZZnWCWWB4sP3HYLBm6jovxSTNp6eT
FZ2DgNmmTC1dGWyOvDeHtJE=
-----END CERTIFICATE-----`

const PLANS = [
  { name: "Basic", description: "Everyday privacy on three locations.", gb: 100, mbps: 50, trial: 0, monthly: "4.99", yearly: "49.00" },
  { name: "Plus", description: "Every location, no speed cap, 7-day trial.", gb: 500, mbps: null, trial: 7, monthly: "8.99", yearly: "89.00" },
  { name: "Unlimited", description: "No data cap, every location.", gb: 0, mbps: null, trial: 0, monthly: "12.99", yearly: "119.00" }
] as const

const SERVERS = [
  { name: "Amsterdam 1", country: "NL", city: "Amsterdam", protocol: "wireguard", ip: "203.0.113.10", transport: "udp", plans: ["Basic", "Plus", "Unlimited"] },
  { name: "Frankfurt 1", country: "DE", city: "Frankfurt", protocol: "wireguard", ip: "203.0.113.11", transport: "udp", plans: ["Basic", "Plus", "Unlimited"] },
  { name: "New York 1", country: "US", city: "New York", protocol: "openvpn", ip: "203.0.113.12", transport: "udp", plans: ["Basic", "Plus", "Unlimited"] },
  { name: "Tokyo 1", country: "JP", city: "Tokyo", protocol: "wireguard", ip: "203.0.113.13", transport: "udp", plans: ["Plus", "Unlimited"] },
  { name: "London 1", country: "GB", city: "London", protocol: "openvpn", ip: "203.0.113.14", transport: "tcp", plans: ["Plus", "Unlimited"] },
  { name: "Singapore 1", country: "SG", city: "Singapore", protocol: "wireguard", ip: "203.0.113.15", transport: "udp", plans: ["Unlimited"] }
] as const

const FAQ = [
  ["What is a VPN?", "A VPN encrypts your traffic between your device and our server, so networks on the way see only encrypted data."],
  ["Which apps do I need?", "WireGuard servers work with the official WireGuard apps; OpenVPN servers with any OpenVPN client. Download a config from the server list."],
  ["How is bandwidth counted?", "Uploads and downloads add up per calendar month (UTC); the counter resets on the first day of each month."],
  ["Can I cancel auto-renewal?", "Yes: turn auto-renew off on your service; it then simply ends at its expiry date."]
] as const

export interface SeedResult {
  readonly admin: typeof DEMO_ADMIN
  readonly user: typeof DEMO_USER
  readonly created: ReadonlyArray<string>
  /** node tokens of servers created by this run (shown once) */
  readonly nodeTokens: ReadonlyArray<{ readonly server: string; readonly token: string }>
}

const hash = (password: string) => Effect.promise(() => Bun.password.hash(password, { algorithm: "argon2id" }))

export const seedDemo = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* KeyGen
  const appKey = yield* AppKey
  const now = yield* Effect.flatMap(AppClock, (c) => c.now)
  const created: Array<string> = []
  const nodeTokens: Array<{ server: string; token: string }> = []

  const ensureUser = (u: { email: string; password: string; name: string }, role: "user" | "admin") =>
    Effect.gen(function*() {
      const found = yield* sql<{ id: number }>`select id from users where lower(email) = ${u.email}`
      if (found[0]) return { id: found[0].id, isNew: false }
      const passwordHash = yield* hash(u.password)
      const [row] = yield* sql<{ id: number }>`
        insert into users (name, email, password_hash, role, email_verified_at, created_at)
        values (${u.name}, ${u.email}, ${passwordHash}, ${role}, ${now}, ${now}) returning id`
      created.push(`${role} ${u.email}`)
      return { id: row!.id, isNew: true }
    })

  return yield* sql.withTransaction(Effect.gen(function*() {
    yield* ensureUser(DEMO_ADMIN, "admin")

    const planIds = new Map<string, number>()
    const cycleIds = new Map<string, number>()
    for (const p of PLANS) {
      const found = yield* sql<{ id: number }>`select id from plans where name = ${p.name}`
      const id = found[0]?.id ?? (yield* sql<{ id: number }>`
        insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days)
        values (${p.name}, ${p.description}, ${p.gb}, ${p.mbps}, ${p.trial}) returning id`)[0]!.id
      if (!found[0]) created.push(`plan ${p.name}`)
      planIds.set(p.name, id)
      for (const [name, days, price] of [["Monthly", 30, p.monthly], ["Yearly", 365, p.yearly]] as const) {
        const c = yield* sql<{ id: number }>`select id from billing_cycles where plan_id = ${id} and name = ${name}`
        const cycleId = c[0]?.id ?? (yield* sql<{ id: number }>`
          insert into billing_cycles (plan_id, name, duration_days, price, currency)
          values (${id}, ${name}, ${days}, ${price}, 'USD') returning id`)[0]!.id
        cycleIds.set(`${p.name}/${name}`, cycleId)
      }
    }

    for (const [code, type, value, maxUses] of [["WELCOME10", "percentage", "10", null], ["SAVE5", "fixed", "5.00", 100]] as const) {
      const found = yield* sql`select 1 from promo_codes where lower(code) = lower(${code})`
      if (found.length > 0) continue
      yield* sql`insert into promo_codes (code, type, value, max_uses) values (${code}, ${type}, ${value}, ${maxUses})`
      created.push(`promo ${code}`)
    }

    for (const s of SERVERS) {
      const found = yield* sql<{ id: number }>`select id from servers where name = ${s.name}`
      let id = found[0]?.id
      if (id === undefined) {
        const token = `node_${randomToken(40)}`
        const pair = yield* keys.x25519
        const [row] = yield* sql<{ id: number }>`
          insert into servers (name, country, city, protocol, ip, port, transport, public_key, ca_cert, node_token_hash)
          values (${s.name}, ${s.country}, ${s.city}, ${s.protocol}, ${s.ip}, ${s.protocol === "wireguard" ? 51820 : 1194},
                  ${s.transport}, ${s.protocol === "wireguard" ? pair.publicKey : null}, ${s.protocol === "openvpn" ? DEMO_CA : null},
                  ${sha256Hex(token)}) returning id`
        id = row!.id
        created.push(`server ${s.name}`)
        nodeTokens.push({ server: s.name, token })
      }
      for (const plan of s.plans) {
        yield* sql`insert into server_plans (server_id, plan_id) values (${id}, ${planIds.get(plan)!}) on conflict do nothing`
      }
    }

    for (const [i, [question, answer]] of FAQ.entries()) {
      const found = yield* sql`select 1 from faq_entries where question = ${question}`
      if (found.length === 0) {
        yield* sql`insert into faq_entries (question, answer, position) values (${question}, ${answer}, ${i + 1})`
        created.push(`faq ${i + 1}`)
      }
    }

    const demo = yield* ensureUser(DEMO_USER, "user")
    if (demo.isNew) {
      const day = 86_400_000
      const planId = planIds.get("Plus")!
      const cycleId = cycleIds.get("Plus/Yearly")!
      const monthlyId = cycleIds.get("Plus/Monthly")!
      const starts = new Date(now.getTime() - 200 * day)
      const expires = new Date(starts.getTime() + 365 * day)
      const [service] = yield* sql<{ id: number }>`
        insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
        values (${demo.id}, ${planId}, ${cycleId}, 'active', ${starts}, ${expires}, true, ${starts}) returning id`
      yield* sql`insert into user_settings (user_id, email_notifications) values (${demo.id}, true) on conflict do nothing`
      // invoices in every status
      yield* sql`
        insert into invoices (user_id, service_id, plan_id, cycle_id, amount, discount, currency, status, gateway, promo_code,
                              due_date, paid_at, transaction_id, created_at)
        values (${demo.id}, ${service!.id}, ${planId}, ${monthlyId}, '8.99', '0.00', 'USD', 'cancelled', 'manual', null,
                ${new Date(starts.getTime() - 3 * day)}, null, null, ${new Date(starts.getTime() - 10 * day)}),
               (${demo.id}, ${service!.id}, ${planId}, ${cycleId}, '80.10', '8.90', 'USD', 'paid', 'manual', 'WELCOME10',
                ${new Date(starts.getTime() + 7 * day)}, ${starts}, ${`demo-${randomToken(12)}`}, ${starts}),
               (${demo.id}, ${service!.id}, ${planId}, ${cycleId}, '89.00', '0.00', 'USD', 'pending', 'manual', null,
                ${new Date(now.getTime() + 7 * day)}, null, null, ${now})`
      // six months of usage, this month included
      for (let back = 0; back < 6; back++) {
        const period = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1))
        const gib = 1024 ** 3
        const rx = Math.round((12 + back * 7.5) * gib)
        const tx = Math.round((2 + back * 1.25) * gib)
        yield* sql`
          insert into usage_records (service_id, period, rx_bytes, tx_bytes)
          values (${service!.id}, ${period.toISOString().slice(0, 10)}, ${rx}, ${tx}) on conflict do nothing`
      }
      const [ticket] = yield* sql<{ id: number }>`
        insert into tickets (user_id, subject, status, created_at, last_reply_at)
        values (${demo.id}, 'Cannot connect from hotel Wi-Fi', 'open', ${new Date(now.getTime() - 2 * day)}, ${new Date(now.getTime() - day)})
        returning id`
      const adminId = (yield* sql<{ id: number }>`select id from users where lower(email) = ${DEMO_ADMIN.email}`)[0]!.id
      yield* sql`
        insert into ticket_replies (ticket_id, author_id, message, is_admin, created_at)
        values (${ticket!.id}, ${demo.id}, 'The WireGuard app says the handshake did not complete.', false, ${new Date(now.getTime() - 2 * day)}),
               (${ticket!.id}, ${adminId}, 'Hotel networks often block UDP. Try London 1, our OpenVPN server over TCP port 1194.', true, ${new Date(now.getTime() - day)})`
      // a VPN credential so the OpenVPN profile can be used at once
      const secret = randomToken(24)
      yield* sql`
        insert into vpn_credentials (user_id, username, secret_enc, secret_hash)
        values (${demo.id}, ${`u${demo.id}-demo`}, ${appKey.encrypt(secret)}, ${sha256Hex(secret)}) on conflict do nothing`
      created.push("demo service, invoices, usage, ticket")
    }
    return { admin: DEMO_ADMIN, user: DEMO_USER, created, nodeTokens } satisfies SeedResult
  }).pipe(Effect.zipLeft(catalogChanged)))
}).pipe(Effect.orDie)
