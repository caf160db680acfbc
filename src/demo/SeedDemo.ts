import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { RecipientsLive } from "../accounts/Contacts.ts"
import { Passwords } from "../accounts/Passwords.ts"
import { Users } from "../accounts/Users.ts"
import { Invoices } from "../billing/Invoices.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import { randomToken } from "../platform/Crypto.ts"
import { Mailer } from "../platform/Mailer.ts"
import { Services } from "../services/Services.ts"
import { Faq } from "../support/Faq.ts"
import { Tickets } from "../support/Tickets.ts"
import { Devices } from "../vpn/Devices.ts"
import { DomainEventsLive } from "../webhooks/Webhooks.ts"
import { Servers } from "../vpn/Servers.ts"
import { Usage } from "../vpn/Usage.ts"
import { PlanId } from "../platform/Ids.ts"

/**
 * A believable catalogue and one demo user for people trying the API, made through the rooms'
 * services as an admin and a customer would make them. It runs in one transaction and only on a
 * database without the demo admin, so running it twice leaves one copy of everything.
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
  [
    "Which apps do I need?",
    "WireGuard servers work with the official WireGuard apps; OpenVPN servers with any OpenVPN client. Download a config from the server list."
  ],
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

const DAY_MS = 86_400_000
const GIB = 1024 ** 3

/** `effect` as if it ran at `date`: the demo's history (invoices, replies) keeps its own dates */
const at = (date: Date) => Effect.provideService(AppClock, { now: Effect.succeed(date) })

const seed = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const users = yield* Users
  const passwords = yield* Passwords
  const catalog = yield* Catalog
  const servers = yield* Servers
  const faq = yield* Faq
  const services = yield* Services
  const invoices = yield* Invoices
  const usage = yield* Usage
  const tickets = yield* Tickets
  const devices = yield* Devices
  const now = yield* Effect.flatMap(AppClock, (c) => c.now)
  const created: Array<string> = []
  const nodeTokens: Array<{ server: string; token: string }> = []

  // the demo admin is made in the same transaction as everything else: it marks a seeded database
  if (Option.isSome(yield* users.findByEmail(DEMO_ADMIN.email))) return { admin: DEMO_ADMIN, user: DEMO_USER, created, nodeTokens }

  const makeUser = (u: { email: string; password: string; name: string }, role: "user" | "admin") =>
    Effect.gen(function* () {
      const passwordHash = yield* passwords.hash(u.password)
      const user = yield* users.insert({ name: u.name, email: u.email, passwordHash, role, verifiedAt: now, now })
      created.push(`${role} ${u.email}`)
      return user
    })

  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const admin = yield* makeUser(DEMO_ADMIN, "admin")

      const planIds = new Map<string, number>()
      const cycles = new Map<string, { id: number; price: string }>()
      for (const p of PLANS) {
        const plan = yield* catalog.createPlan({
          name: p.name,
          description: p.description,
          bandwidth_limit_gb: p.gb,
          speed_limit_mbps: p.mbps,
          trial_days: p.trial,
          is_active: true
        })
        created.push(`plan ${p.name}`)
        planIds.set(p.name, plan.id)
        for (const [name, days, price] of [
          ["Monthly", 30, p.monthly],
          ["Yearly", 365, p.yearly]
        ] as const) {
          const cycle = yield* catalog.createCycle({ planId: plan.id, name, durationDays: days, priceCents: Math.round(Number(price) * 100), currency: "USD" })
          cycles.set(`${p.name}/${name}`, { id: cycle.id, price })
        }
      }

      // values in hundredths: 10 % and 5.00
      for (const [code, type, value, maxUses] of [
        ["WELCOME10", "percentage", 1000, null],
        ["SAVE5", "fixed", 500, 100]
      ] as const) {
        yield* catalog.createPromo({ code, type, value, expiresAt: null, maxUses, maxUsesPerUser: 1, planIds: [] })
        created.push(`promo ${code}`)
      }

      for (const s of SERVERS) {
        const server = yield* servers.create({
          name: s.name,
          country: s.country,
          city: s.city,
          protocol: s.protocol,
          ip: s.ip,
          transport: s.transport,
          ...(s.protocol === "openvpn" ? { ca_cert: DEMO_CA } : {}),
          plan_ids: s.plans.map((plan) => planIds.get(plan)!)
        })
        created.push(`server ${s.name}`)
        nodeTokens.push({ server: s.name, token: server.node_token })
      }

      for (const [i, [question, answer]] of FAQ.entries()) {
        yield* faq.create({ question, answer, position: i + 1 })
        created.push(`faq ${i + 1}`)
      }

      const demo = yield* makeUser(DEMO_USER, "user")
      yield* users.setSettings(demo.id, { email: true }, now)
      const planId = planIds.get("Plus")!
      const yearly = cycles.get("Plus/Yearly")!
      const monthly = cycles.get("Plus/Monthly")!
      const starts = new Date(now.getTime() - 200 * DAY_MS)
      const serviceId = yield* at(starts)(
        services.create({
          userId: demo.id,
          planId: PlanId.make(planId),
          cycleId: yearly.id,
          status: "active",
          startsAt: starts,
          expiresAt: new Date(starts.getTime() + 365 * DAY_MS),
          autoRenew: true
        })
      )

      // an invoice in every status: a cancelled monthly one, the paid yearly one (with a promo), the next renewal
      const invoice = (cycle: { id: number; price: string }, amount: string, discount: string, promoCode: string | null, dueDate: Date) => ({
        userId: demo.id,
        serviceId,
        planId,
        cycleId: cycle.id,
        amount,
        discount,
        currency: "USD",
        status: "pending" as const,
        promoCode,
        promoId: null,
        dueDate
      })
      yield* at(new Date(starts.getTime() - 10 * DAY_MS))(
        invoices.insert({ ...invoice(monthly, monthly.price, "0.00", null, new Date(starts.getTime() - 3 * DAY_MS)), status: "cancelled" })
      )
      const paid = yield* at(starts)(invoices.insert(invoice(yearly, "80.10", "8.90", "WELCOME10", new Date(starts.getTime() + 7 * DAY_MS))))
      yield* invoices.markPaid(paid.id, `demo-${randomToken(12)}`, serviceId, starts)
      yield* invoices.insert(invoice(yearly, yearly.price, "0.00", null, new Date(now.getTime() + 7 * DAY_MS)))

      // six months of usage, this month included
      for (let back = 0; back < 6; back++) {
        const period = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1)).toISOString().slice(0, 10)
        yield* usage.add(serviceId, period, Math.round((12 + back * 7.5) * GIB), Math.round((2 + back * 1.25) * GIB))
      }

      const ticket = yield* at(new Date(now.getTime() - 2 * DAY_MS))(
        tickets.open(demo.id, { subject: "Cannot connect from hotel Wi-Fi", message: "The WireGuard app says the handshake did not complete." })
      )
      yield* at(new Date(now.getTime() - DAY_MS))(
        tickets.staffReply(ticket.id, admin.id, "Hotel networks often block UDP. Try London 1, our OpenVPN server over TCP port 1194.")
      )
      // a VPN credential so the OpenVPN profile can be used at once
      yield* devices.defaultCredentials(demo.id)
      created.push("demo service, invoices, usage, ticket")
      return { admin: DEMO_ADMIN, user: DEMO_USER, created, nodeTokens } satisfies SeedResult
    })
  )
})

/** The demo's mail (the staff reply's notice) goes nowhere: demo addresses are nobody's inbox. */
const NoMail = Layer.succeed(Mailer, { send: () => Effect.void })

export const seedDemo = seed.pipe(
  Effect.provide(
    Layer.mergeAll(
      Users.Default,
      Passwords.Default,
      Catalog.Default,
      Servers.Default,
      Faq.Default,
      Services.Default,
      Invoices.Default,
      Usage.Default,
      Tickets.Default.pipe(Layer.provide(NoMail)),
      Devices.Default
    ).pipe(Layer.provide(Layer.mergeAll(RecipientsLive, DomainEventsLive)))
  ),
  Effect.orDie
)
