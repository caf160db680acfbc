/**
 * What the Bun peers (raw `Bun.serve`, Hono) do per route, on `Bun.SQL`: the same queries and
 * the same JSON as the API (token lookup by id + SHA-256 compare, current service, a page of
 * invoices, a WireGuard config). No framework here: each function takes the request's parts
 * and returns a web `Response`.
 */
import { SQL } from "bun"
import pg from "pg"
import { createDecipheriv, createHash, randomInt, timingSafeEqual } from "node:crypto"

export const env = {
  port: Number(process.env.PORT ?? 3000),
  databaseUrl: process.env.DATABASE_URL!,
  appKey: Buffer.from((process.env.APP_KEY ?? "").replace(/^base64:/, ""), "base64"),
  publicUrl: (process.env.PUBLIC_URL ?? `http://localhost:${process.env.PORT ?? 3000}`).replace(/\/+$/, ""),
  tokenTtlMs: Number(process.env.TOKEN_TTL_DAYS ?? 30) * 86_400_000
}

/**
 * `Bun.SQL`, or with PEER_DRIVER=pg the `pg` pool our server uses (through Bun's `node:net`),
 * behind the same tagged template: the difference between the two is the driver's cost.
 */
const viaPg = (): SQL => {
  const pool = new pg.Pool({ connectionString: env.databaseUrl, max: 10 })
  const query = (strings: TemplateStringsArray, ...values: Array<unknown>) =>
    pool
      .query(
        strings.reduce((text, part, i) => `${text}$${i}${part}`),
        values
      )
      .then((r) => r.rows)
  return query as unknown as SQL
}
export const driver = process.env.PEER_DRIVER === "pg" ? "pg" : "Bun.SQL"
export const sql: SQL = driver === "pg" ? viaPg() : new SQL(env.databaseUrl, { max: 10 })

const JSON_HEADERS = { "content-type": "application/json" }
export const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: JSON_HEADERS })

const fail = (status: number, message: string) => json({ success: false, message }, status)
export const unauthenticated = () => fail(401, "Unauthenticated.")
export const notFound = () => fail(404, "Resource not found.")

const iso = (d: Date | null) => (d === null ? null : d.toISOString())

// ---- status, plans -------------------------------------------------------------------------

export const status = async () => {
  await sql`select 1`
  return json({ success: true, message: "OK", data: { database: "ok" } })
}

export const plans = async () => {
  const rows = await sql`
    select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days
    from plans where is_active order by id`
  return json({ success: true, data: rows })
}

// ---- bearer tokens ---------------------------------------------------------------------------

const BEARER = /^bearer +(\S.*)$/i
const TOKEN_SHAPE = /^([1-9][0-9]{0,9})\|([A-Za-z0-9]{40})$/

export const authenticate = async (authorization: string | null): Promise<number | undefined> => {
  const secret = authorization ? BEARER.exec(authorization)?.[1]?.trim() : undefined
  const match = secret ? TOKEN_SHAPE.exec(secret) : null
  if (!match) return undefined
  const id = Number(match[1])
  if (id > 2_147_483_647) return undefined
  const [row] = await sql`
    select t.user_id, t.secret_hash, t.last_used_at, u.role
    from access_tokens t join users u on u.id = t.user_id
    where t.id = ${id} and u.status = 1`
  if (!row) return undefined
  const hash = createHash("sha256").update(match[2]!).digest("hex")
  if (!timingSafeEqual(Buffer.from(hash), Buffer.from(row.secret_hash as string))) return undefined
  const lastUsed = (row.last_used_at as Date).getTime()
  const now = Date.now()
  if (lastUsed + env.tokenTtlMs <= now) return undefined
  if (now - lastUsed >= 60_000) await sql`update access_tokens set last_used_at = ${new Date(now)} where id = ${id}`
  return row.user_id as number
}

// ---- services, invoices --------------------------------------------------------------------

const currentServiceRow = async (userId: number) => {
  const [row] = await sql`
    select s.id, s.status, s.starts_at, s.expires_at, s.auto_renew,
           p.id as plan_id, p.name as plan_name, p.bandwidth_limit_gb, p.speed_limit_mbps,
           c.id as cycle_id, c.name as cycle_name, c.duration_days, c.price::text as price, c.currency
    from services s join plans p on p.id = s.plan_id join billing_cycles c on c.id = s.cycle_id
    where s.user_id = ${userId} and s.status in ('active', 'suspended') and s.expires_at > now()
    order by s.created_at desc, s.id desc limit 1`
  return row as
    | {
        id: number
        status: string
        starts_at: Date
        expires_at: Date
        auto_renew: boolean
        plan_id: number
        plan_name: string
        bandwidth_limit_gb: number
        speed_limit_mbps: number | null
        cycle_id: number
        cycle_name: string
        duration_days: number
        price: string
        currency: string
      }
    | undefined
}

export const currentService = async (authorization: string | null) => {
  const userId = await authenticate(authorization)
  if (userId === undefined) return unauthenticated()
  const s = await currentServiceRow(userId)
  if (!s) return notFound()
  return json({
    success: true,
    data: {
      id: s.id,
      plan: { id: s.plan_id, name: s.plan_name, bandwidth_limit_gb: s.bandwidth_limit_gb, speed_limit_mbps: s.speed_limit_mbps },
      cycle: { id: s.cycle_id, name: s.cycle_name, duration_days: s.duration_days, price: s.price, currency: s.currency },
      status: s.status,
      starts_at: iso(s.starts_at),
      expires_at: iso(s.expires_at),
      auto_renew: s.auto_renew
    }
  })
}

const PER_PAGE = 15

export const invoices = async (authorization: string | null, pageParam: string | null) => {
  const userId = await authenticate(authorization)
  if (userId === undefined) return unauthenticated()
  const page = pageParam === null ? 1 : Number(pageParam)
  if (!Number.isInteger(page) || page < 1) {
    return json({ success: false, message: "The given data was invalid.", errors: { page: ["The page field must be an integer."] } }, 422)
  }
  const [[count], rows] = await Promise.all([
    sql`select count(*)::int as total from invoices where user_id = ${userId}`,
    sql`select id, uuid, amount, currency, status, gateway, created_at, paid_at
        from invoices where user_id = ${userId}
        order by created_at desc, id desc limit ${PER_PAGE} offset ${(page - 1) * PER_PAGE}`
  ])
  const total = count.total as number
  const lastPage = Math.max(1, Math.ceil(total / PER_PAGE))
  const url = (n: number) => `${env.publicUrl}/v1/invoices?page=${n}`
  return json({
    success: true,
    data: rows.map((r: Record<string, unknown>) => ({
      id: r.id,
      uuid: r.uuid,
      amount: r.amount,
      currency: r.currency,
      status: r.status,
      gateway: r.gateway,
      created_at: iso(r.created_at as Date),
      paid_at: iso(r.paid_at as Date | null)
    })),
    meta: { current_page: page, last_page: lastPage, per_page: PER_PAGE, total },
    links: {
      first: url(1),
      last: url(lastPage),
      prev: page > 1 ? url(Math.min(page - 1, lastPage)) : null,
      next: page < lastPage ? url(page + 1) : null
    }
  })
}

// ---- WireGuard config ------------------------------------------------------------------------

const decrypt = (sealed: string) => {
  const raw = Buffer.from(sealed.slice(3), "base64")
  const decipher = createDecipheriv("aes-256-gcm", env.appKey, raw.subarray(0, 12))
  decipher.setAuthTag(raw.subarray(12, 28))
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "") || "server"

export const wireguard = async (authorization: string | null, serverParam: string) => {
  const userId = await authenticate(authorization)
  if (userId === undefined) return unauthenticated()
  const serverId = Number(serverParam)
  if (!/^[1-9][0-9]{0,9}$/.test(serverParam) || serverId > 2_147_483_647) return notFound()
  const [server] = await sql`
    select id, name, ip, port, public_key, dns from servers where id = ${serverId} and protocol = 'wireguard'`
  if (!server) return notFound()
  const s = await currentServiceRow(userId)
  if (!s) return fail(403, "Your plan does not include this server.")
  const [grant] = await sql`select 1 as ok from server_plans where server_id = ${serverId} and plan_id = ${s.plan_id}`
  if (!grant) return fail(403, "Your plan does not include this server.")
  if (s.status === "suspended") return fail(423, "Service suspended.")
  if (s.bandwidth_limit_gb > 0) {
    const [usage] = await sql`
      select coalesce(sum(rx_bytes + tx_bytes), 0)::float8 as used from usage_records
      where service_id = ${s.id} and period = date_trunc('month', now() at time zone 'utc')::date`
    if ((usage.used as number) >= s.bandwidth_limit_gb * 1024 ** 3) return fail(423, "Bandwidth limit exceeded.")
  }
  const [peer] = await sql`
    select private_key_enc, host(address) as address from wireguard_peers where user_id = ${userId} and server_id = ${serverId}`
  if (!peer) return fail(500, "An unexpected error occurred.") // the bench seeds the peer
  const body = [
    "[Interface]",
    `PrivateKey = ${decrypt(peer.private_key_enc)}`,
    `Address = ${peer.address}/32`,
    `DNS = ${server.dns}`,
    "",
    "[Peer]",
    `PublicKey = ${server.public_key}`,
    `Endpoint = ${server.ip}:${server.port}`,
    "AllowedIPs = 0.0.0.0/0, ::/0",
    "PersistentKeepalive = 25",
    ""
  ].join("\n")
  return new Response(body, {
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "content-disposition": `attachment; filename="${slug(server.name)}.conf"`,
      "cache-control": "no-store"
    }
  })
}

// ---- login (reference only: no rate limit, unbounded hashing) --------------------------------

export const login = async (body: unknown) => {
  const payload = (body ?? {}) as { email?: unknown; password?: unknown }
  if (typeof payload.email !== "string" || typeof payload.password !== "string") {
    return json({ success: false, message: "The given data was invalid." }, 422)
  }
  const email = payload.email.trim().toLowerCase()
  const [user] = await sql`select id, name, email, status, password_hash from users where lower(email) = ${email}`
  if (!user || !(await Bun.password.verify(payload.password, user.password_hash))) {
    return fail(401, "Invalid credentials.")
  }
  if (user.status !== 1) return fail(403, "Account disabled.")
  const secret = randomSecret()
  const [row] = await sql`
    insert into access_tokens (user_id, secret_hash) values (${user.id}, ${createHash("sha256").update(secret).digest("hex")})
    returning id`
  return json({
    success: true,
    data: { token: `${row.id}|${secret}`, user: { id: user.id, name: user.name, email: user.email, status: user.status } }
  })
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
const randomSecret = () => {
  let out = ""
  for (let i = 0; i < 40; i++) out += ALPHANUMERIC[randomInt(62)]
  return out
}
