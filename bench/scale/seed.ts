/**
 * The scale benchmark's data set, written with plain SQL (`generate_series`) into a database the
 * server has migrated: `users` users (ids 1..users, user 1 the admin), one live token and one
 * active service each, one invoice each, ten months of usage per service, a ticket with a reply
 * for every tenth user, 500 WireGuard servers with node tokens, and `peers` peers on server 1.
 * Every secret is derived from an id, so the benchmark can authenticate as anyone:
 * user `i`'s token is `i|S000..i`, server `i`'s node token `N000..i` (40 characters).
 *
 * The measured user `measured` (a peer on server 1, in the middle of the ids) gets the same
 * rows at every size (30 invoices, 3 tickets): a read's cost may grow only with the table.
 */
import { SQL } from "bun"
import nacl from "tweetnacl"
import { ARGON2ID } from "../../src/accounts/Passwords.ts"
import { AppKey } from "../../src/platform/Crypto.ts"

export const SERVERS = 500
export const USAGE_MONTHS = 10
export const PASSWORD = "scale-Password-2026"

export interface Size {
  readonly label: "small" | "large"
  readonly users: number
  /** WireGuard peers on server 1, owned by users 1..peers */
  readonly peers: number
}

export interface ScaleData {
  readonly size: Size
  /** the user every read is made as */
  readonly measured: number
  readonly planId: number
  readonly serviceId: number
  readonly invoiceUuid: string
  readonly ticketId: number
  /** users without a peer on server 1, for first downloads */
  readonly freshUsers: ReadonlyArray<number>
  readonly seedSeconds: number
  readonly rows: Record<string, number>
}

const secret40 = (prefix: string, id: number) => `${prefix}${String(id).padStart(39, "0")}`
export const userToken = (id: number) => `${id}|${secret40("S", id)}`
export const nodeToken = (serverId: number) => secret40("N", serverId)
/** peer `i`'s public key on server 1 (44 characters, base64-shaped) */
export const peerKey = (i: number) => `P${String(i).padStart(42, "0")}=`
const sqlSecret = (prefix: string, column: string) => `encode(sha256(convert_to('${prefix}' || lpad(${column}::text, 39, '0'), 'UTF8')), 'hex')`

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

export const seedScale = async (url: string, appKey: Uint8Array, size: Size): Promise<ScaleData> => {
  const sql = new SQL(url, { max: 1 })
  const t0 = performance.now()
  const step = async (label: string, query: string) => {
    const t = performance.now()
    await sql.unsafe(query)
    console.log(`  [${size.label}] ${label}: ${((performance.now() - t) / 1000).toFixed(1)} s`)
  }
  try {
    const N = size.users
    const P = size.peers
    const measured = Math.max(2, Math.floor(P / 2))
    const passwordHash = await Bun.password.hash(PASSWORD, ARGON2ID)
    const peerPrivate = AppKey.make(appKey).encrypt(b64(nacl.box.keyPair().secretKey))
    const serverKey = b64(nacl.box.keyPair().publicKey)

    await sql.unsafe(`set synchronous_commit = off; set maintenance_work_mem = '256MB'`)
    // the trigram index is built after the load (one sort instead of a million GIN inserts)
    await sql.unsafe(`drop index if exists users_email_trgm`)
    await step(
      "catalogue",
      `
      insert into plans (id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, is_active) overriding system value
      values (1, 'Basic', 'Basic plan.', 100, 50, 0, true), (2, 'Plus', 'Plus plan.', 0, null, 7, true),
             (3, 'Unlimited', 'Unlimited plan.', 0, null, 0, true);
      select setval(pg_get_serial_sequence('plans', 'id'), 3);
      insert into billing_cycles (id, plan_id, name, duration_days, price, currency) overriding system value
      select p * 2 - 1 + c, p, (array['Monthly', 'Yearly'])[c + 1], (array[30, 365])[c + 1], (array[8.99, 89.00])[c + 1], 'USD'
      from generate_series(1, 3) p, generate_series(0, 1) c;
      select setval(pg_get_serial_sequence('billing_cycles', 'id'), 6);
      insert into faq_entries (question, answer, position)
      select 'Question ' || i || '?', 'Answer ' || i || '.', i from generate_series(1, 20) i;`
    )
    await step(
      `${N} users`,
      `
      insert into users (id, name, email, password_hash, email_verified_at, role, created_at, updated_at) overriding system value
      select i, 'User ' || i, 'user' || i || '@scale.example', '${passwordHash}', now(),
             case when i = 1 then 'admin' else 'user' end, now() - i * interval '1 second', now()
      from generate_series(1, ${N}) i;
      select setval(pg_get_serial_sequence('users', 'id'), ${N});`
    )
    await step(
      `${N} tokens`,
      `
      insert into access_tokens (id, user_id, secret_hash, created_at, last_used_at) overriding system value
      select i, i, ${sqlSecret("S", "i")}, now(), now() from generate_series(1, ${N}) i;
      select setval(pg_get_serial_sequence('access_tokens', 'id'), ${N});`
    )
    await step(
      `${N} services`,
      `
      insert into services (id, user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at, updated_at)
        overriding system value
      select i, i, 2, 3, 'active', now() - interval '10 days', now() + interval '20 days' + (i % 1000) * interval '1 hour',
             true, now() - interval '10 days', now()
      from generate_series(1, ${N}) i;
      select setval(pg_get_serial_sequence('services', 'id'), ${N});`
    )
    await step(
      `${N} invoices`,
      `
      insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, gateway, due_date, paid_at, created_at)
      select i, i, 2, 3, '8.99', 'USD', 'paid', 'manual', now() - interval '3 days', now() - interval '10 days',
             now() - interval '10 days'
      from generate_series(1, ${N}) i;
      insert into invoices (user_id, service_id, plan_id, cycle_id, amount, currency, status, gateway, due_date, paid_at, created_at)
      select ${measured}, ${measured}, 2, 3, '8.99', 'USD', (array['paid', 'cancelled'])[1 + k % 2], 'manual',
             now() - k * interval '30 days', case when k % 2 = 0 then now() - k * interval '30 days' end,
             now() - k * interval '30 days' - interval '1 hour'
      from generate_series(1, 30) k;`
    )
    await step(
      `${N * USAGE_MONTHS} usage rows`,
      `
      insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
      select s, (date_trunc('month', now() at time zone 'utc') - k * interval '1 month')::date,
             (s::bigint * 7919 + k * 104729) % 5000000000, (s::bigint * 104729 + k * 7919) % 1000000000, now()
      from generate_series(1, ${N}) s, generate_series(0, ${USAGE_MONTHS - 1}) k;`
    )
    await step(
      `${Math.ceil(N / 10)} tickets`,
      `
      insert into tickets (user_id, subject, status, last_reply_at, created_at, updated_at)
      select u, 'Ticket of user ' || u, 'open', now() - u * interval '1 second', now() - interval '1 day', now()
      from generate_series(1, ${N}, 10) u;
      insert into tickets (user_id, subject, status, last_reply_at, created_at, updated_at)
      select ${measured}, 'Question ' || k, 'open', now() - k * interval '1 hour', now() - interval '2 days', now()
      from generate_series(1, 3) k;
      insert into ticket_replies (ticket_id, author_id, message, created_at)
      select id, user_id, 'First message of ' || subject || '.', created_at from tickets;`
    )
    await step(
      `${SERVERS} servers, ${P} peers`,
      `
      insert into servers (id, name, country, city, protocol, ip, port, public_key, subnet, node_token_hash) overriding system value
      select i, 'Server ' || i, 'NL', 'Amsterdam', 'wireguard', '203.0.' || (i / 250) || '.' || (i % 250 + 1), 51820,
             '${serverKey}', case when i = 1 then '10.64.0.0/10'::cidr else '10.66.0.0/16'::cidr end, ${sqlSecret("N", "i")}
      from generate_series(1, ${SERVERS}) i;
      select setval(pg_get_serial_sequence('servers', 'id'), ${SERVERS});
      insert into server_plans (server_id, plan_id) select s, p from generate_series(1, ${SERVERS}) s, generate_series(1, 3) p;
      -- each peer's owner has one device ([D90]; device i of user i), made here in one statement
      -- rather than by the insert trigger's lock per user
      insert into vpn_devices (id, user_id, name, platform, created_at) overriding system value
      select i, i, 'Default', 'other', now() from generate_series(1, greatest(${P}, 10)) i;
      select setval(pg_get_serial_sequence('vpn_devices', 'id'), greatest(${P}, 10));
      insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address, created_at)
      select i, i, 1, 'P' || lpad(i::text, 42, '0') || '=', '${peerPrivate}', '10.64.0.1'::inet + i, now()
      from generate_series(1, ${P}) i;
      -- ten peers on each other server (users 1..10): first downloads at 10 peers
      insert into wireguard_peers (user_id, device_id, server_id, public_key, private_key_enc, address, created_at)
      select k, k, s, 'Q' || lpad(s::text, 4, '0') || lpad(k::text, 38, '0') || '=', '${peerPrivate}', '10.66.0.1'::inet + k, now()
      from generate_series(2, ${SERVERS}) s, generate_series(1, 10) k;
      -- the allocation's state ([D90]): each peer's host number, each server's high-water mark
      select vpn_reindex_hosts(id) from servers;`
    )
    await step("trigram index", `create index if not exists users_email_trgm on users using gin (lower(email) gin_trgm_ops)`).catch((e) =>
      console.log(`  [${size.label}] no trigram index: ${e}`)
    )
    await step("vacuum analyze", `vacuum analyze`)

    const [invoice] = await sql`select uuid::text as uuid from invoices where user_id = ${measured} order by id desc limit 1`
    const [ticket] = await sql`select id from tickets where user_id = ${measured} order by id desc limit 1`
    const counts = await sql.unsafe(`
      select (select count(*) from users)::int as users, (select count(*) from invoices)::int as invoices,
             (select count(*) from services)::int as services, (select count(*) from wireguard_peers)::int as peers,
             (select count(*) from servers)::int as servers, (select count(*) from usage_records)::int as usage_rows,
             (select count(*) from tickets)::int as tickets`)
    const fresh = Array.from({ length: Math.min(400, N - P - 1) }, (_, i) => P + 1 + i)
    return {
      size,
      measured,
      planId: 2,
      serviceId: measured,
      invoiceUuid: invoice.uuid,
      ticketId: ticket.id,
      freshUsers: fresh,
      seedSeconds: (performance.now() - t0) / 1000,
      rows: counts[0]
    }
  } finally {
    await sql.close()
  }
}
