/**
 * The benchmark's data set, written with plain SQL against the schema of migrations/0001_init.ts
 * (the server has applied the migrations before): a catalogue, one user with a live token, an
 * active service, 100 invoices, a WireGuard server with that user's peer, and many users sharing
 * one known password for the login scenario.
 */
import { SQL } from "bun"
import nacl from "tweetnacl"
import { ARGON2ID } from "../../src/accounts/Passwords.ts"
import { AppKey, randomToken, sha256Hex } from "../../src/platform/Crypto.ts"

export const LOGIN_PASSWORD = "bench-Password-2026"
export const LOGIN_USERS = 10_000

export interface Seeded {
  readonly token: string
  readonly userId: number
  readonly serverId: number
  readonly loginUsers: number
  readonly loginPassword: string
  /** the argon2id hash every login user shares (the verify-alone measurement uses it too) */
  readonly passwordHash: string
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

export const seed = async (url: string, appKey: Uint8Array): Promise<Seeded> => {
  const sql = new SQL(url, { max: 2 })
  try {
    // the app's own parameters: a hash of others would be re-hashed at each user's first login ([D20] rev. 2)
    const passwordHash = await Bun.password.hash(LOGIN_PASSWORD, ARGON2ID)
    return await sql.begin(async (tx) => {
      // catalogue: three active plans and one retired, two cycles each
      const plans: Array<number> = []
      for (const [name, gb, mbps, trial, active] of [
        ["Basic", 100, 50, 0, true],
        ["Plus", 500, null, 7, true],
        ["Unlimited", 0, null, 0, true],
        ["Legacy", 50, 20, 0, false]
      ] as const) {
        const [plan] = await tx`
          insert into plans (name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active)
          values (${name}, ${`${name} plan for the benchmark.`}, ${gb}, ${mbps}, ${trial}, ${active}) returning id`
        plans.push(plan.id)
        await tx`
          insert into billing_cycles (plan_id, name, duration_days, price, currency)
          values (${plan.id}, 'Monthly', 30, '8.99', 'USD'), (${plan.id}, 'Yearly', 365, '89.00', 'USD')`
      }
      const plusId = plans[1]!
      const [cycle] = await tx`select id from billing_cycles where plan_id = ${plusId} and name = 'Monthly'`

      // the dashboard user, its live token and its active service
      const [user] = await tx`
        insert into users (name, email, password_hash, email_verified_at)
        values ('Bench User', 'bench@bench.example', ${passwordHash}, now()) returning id`
      const secret = randomToken(40)
      const [token] = await tx`
        insert into access_tokens (user_id, secret_hash, last_used_at)
        values (${user.id}, ${sha256Hex(secret)}, now()) returning id`
      const [service] = await tx`
        insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at)
        values (${user.id}, ${plusId}, ${cycle.id}, 'active', now() - interval '10 days', now() + interval '20 days',
                true, now() - interval '10 days') returning id`
      await tx`
        insert into usage_records (service_id, period, rx_bytes, tx_bytes)
        values (${service.id}, date_trunc('month', now() at time zone 'utc')::date, 700000000, 300000000)`

      // 100 invoices, newest first by a day each: paid, pending, cancelled in turn
      await tx`
        insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, gateway, due_date,
                              paid_at, created_at)
        select ${user.id}, ${service.id}, ${plusId}, ${cycle.id}, '8.99', 'USD',
               (array['paid', 'pending', 'cancelled'])[1 + i % 3], 'manual',
               now() - (i || ' days')::interval + interval '7 days',
               case when i % 3 = 0 then now() - (i || ' days')::interval + interval '1 hour' end,
               now() - (i || ' days')::interval
        from generate_series(1, 100) as i`

      // a WireGuard server granted by Plus, with the user's peer already made
      const serverPair = nacl.box.keyPair()
      const [server] = await tx`
        insert into servers (name, country, city, protocol, ip, port, public_key, node_token_hash)
        values ('Amsterdam 1', 'NL', 'Amsterdam', 'wireguard', '203.0.113.10', 51820, ${b64(serverPair.publicKey)},
                ${sha256Hex(randomToken(40))}) returning id`
      await tx`insert into server_plans (server_id, plan_id) values (${server.id}, ${plusId}), (${server.id}, ${plans[2]!})`
      const peerPair = nacl.box.keyPair()
      await tx`
        insert into wireguard_peers (user_id, server_id, public_key, private_key_enc, address)
        values (${user.id}, ${server.id}, ${b64(peerPair.publicKey)},
                ${AppKey.make(appKey).encrypt(b64(peerPair.secretKey))}, '10.66.0.2')`

      // login users: one shared hash (a hash carries its own salt, so verify works for each)
      await tx`
        insert into users (name, email, password_hash, email_verified_at)
        select 'Login ' || n, 'login-' || n || '@bench.example', ${passwordHash}, now()
        from generate_series(0, ${LOGIN_USERS - 1}) as n`
      await tx`analyze`.catch(() => undefined)

      return {
        token: `${token.id}|${secret}`,
        userId: user.id,
        serverId: server.id,
        loginUsers: LOGIN_USERS,
        loginPassword: LOGIN_PASSWORD,
        passwordHash
      }
    })
  } finally {
    await sql.close()
  }
}
