// Fastify on Node over `pg`: what a team picking the Node mainstream would write.
// Plain JavaScript so that Node 20 runs it as is; the same queries and JSON as bench/peers/common.ts.
import Fastify from "fastify"
import { createDecipheriv, createHash, timingSafeEqual } from "node:crypto"
import pg from "pg"

const port = Number(process.env.PORT ?? 3000)
const appKey = Buffer.from((process.env.APP_KEY ?? "").replace(/^base64:/, ""), "base64")
const publicUrl = (process.env.PUBLIC_URL ?? `http://localhost:${port}`).replace(/\/+$/, "")
const tokenTtlMs = Number(process.env.TOKEN_TTL_DAYS ?? 30) * 86_400_000
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 })
const q = async (text, values) => (await pool.query(text, values)).rows

const iso = (d) => (d === null ? null : d.toISOString())
const fail = (reply, status, message) => reply.code(status).send({ success: false, message })

const BEARER = /^bearer +(\S.*)$/i
const TOKEN_SHAPE = /^([1-9][0-9]{0,9})\|([A-Za-z0-9]{40})$/

const authenticate = async (authorization) => {
  const secret = authorization ? BEARER.exec(authorization)?.[1]?.trim() : undefined
  const match = secret ? TOKEN_SHAPE.exec(secret) : null
  if (!match) return undefined
  const id = Number(match[1])
  if (id > 2_147_483_647) return undefined
  const [row] = await q(
    `select t.user_id, t.secret_hash, t.last_used_at, u.role
     from access_tokens t join users u on u.id = t.user_id
     where t.id = $1 and u.status = 1`,
    [id]
  )
  if (!row) return undefined
  const hash = createHash("sha256").update(match[2]).digest("hex")
  if (!timingSafeEqual(Buffer.from(hash), Buffer.from(row.secret_hash))) return undefined
  const lastUsed = row.last_used_at.getTime()
  const now = Date.now()
  if (lastUsed + tokenTtlMs <= now) return undefined
  if (now - lastUsed >= 60_000) await q(`update access_tokens set last_used_at = $1 where id = $2`, [new Date(now), id])
  return row.user_id
}

const currentServiceRow = async (userId) =>
  (await q(
    `select s.id, s.status, s.starts_at, s.expires_at, s.auto_renew,
            p.id as plan_id, p.name as plan_name, p.bandwidth_limit_gb, p.speed_limit_mbps,
            c.id as cycle_id, c.name as cycle_name, c.duration_days, c.price::text as price, c.currency
     from services s join plans p on p.id = s.plan_id join billing_cycles c on c.id = s.cycle_id
     where s.user_id = $1 and s.status in ('active', 'suspended') and s.expires_at > now()
     order by s.created_at desc, s.id desc limit 1`,
    [userId]
  ))[0]

const decrypt = (sealed) => {
  const raw = Buffer.from(sealed.slice(3), "base64")
  const decipher = createDecipheriv("aes-256-gcm", appKey, raw.subarray(0, 12))
  decipher.setAuthTag(raw.subarray(12, 28))
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8")
}
const slug = (name) => name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "server"

const app = Fastify({ logger: false })

app.get("/v1/status", async () => {
  await q("select 1")
  return { success: true, message: "OK", data: { database: "ok" } }
})

app.get("/v1/plans", async () => ({
  success: true,
  data: await q(
    `select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days
     from plans where is_active order by id`
  )
}))

app.get("/v1/services/current", async (request, reply) => {
  const userId = await authenticate(request.headers.authorization)
  if (userId === undefined) return fail(reply, 401, "Unauthenticated.")
  const s = await currentServiceRow(userId)
  if (!s) return fail(reply, 404, "Resource not found.")
  return {
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
  }
})

const PER_PAGE = 15
app.get("/v1/invoices", async (request, reply) => {
  const userId = await authenticate(request.headers.authorization)
  if (userId === undefined) return fail(reply, 401, "Unauthenticated.")
  const page = request.query.page === undefined ? 1 : Number(request.query.page)
  if (!Number.isInteger(page) || page < 1) return fail(reply, 422, "The given data was invalid.")
  const [[count], rows] = await Promise.all([
    q(`select count(*)::int as total from invoices where user_id = $1`, [userId]),
    q(
      `select id, uuid, amount, currency, status, gateway, created_at, paid_at
       from invoices where user_id = $1 order by created_at desc, id desc limit $2 offset $3`,
      [userId, PER_PAGE, (page - 1) * PER_PAGE]
    )
  ])
  const lastPage = Math.max(1, Math.ceil(count.total / PER_PAGE))
  const url = (n) => `${publicUrl}/v1/invoices?page=${n}`
  return {
    success: true,
    data: rows.map((r) => ({
      id: r.id,
      uuid: r.uuid,
      amount: r.amount,
      currency: r.currency,
      status: r.status,
      gateway: r.gateway,
      created_at: iso(r.created_at),
      paid_at: iso(r.paid_at)
    })),
    meta: { current_page: page, last_page: lastPage, per_page: PER_PAGE, total: count.total },
    links: {
      first: url(1),
      last: url(lastPage),
      prev: page > 1 ? url(Math.min(page - 1, lastPage)) : null,
      next: page < lastPage ? url(page + 1) : null
    }
  }
})

app.get("/v1/servers/:server/wireguard", async (request, reply) => {
  const userId = await authenticate(request.headers.authorization)
  if (userId === undefined) return fail(reply, 401, "Unauthenticated.")
  const param = request.params.server
  const serverId = Number(param)
  if (!/^[1-9][0-9]{0,9}$/.test(param) || serverId > 2_147_483_647) return fail(reply, 404, "Resource not found.")
  const [server] = await q(
    `select id, name, ip, port, public_key, dns from servers where id = $1 and protocol = 'wireguard'`,
    [serverId]
  )
  if (!server) return fail(reply, 404, "Resource not found.")
  const s = await currentServiceRow(userId)
  if (!s) return fail(reply, 403, "Your plan does not include this server.")
  const [grant] = await q(`select 1 as ok from server_plans where server_id = $1 and plan_id = $2`, [serverId, s.plan_id])
  if (!grant) return fail(reply, 403, "Your plan does not include this server.")
  if (s.status === "suspended") return fail(reply, 423, "Service suspended.")
  if (s.bandwidth_limit_gb > 0) {
    const [usage] = await q(
      `select coalesce(sum(rx_bytes + tx_bytes), 0)::float8 as used from usage_records
       where service_id = $1 and period = date_trunc('month', now() at time zone 'utc')::date`,
      [s.id]
    )
    if (usage.used >= s.bandwidth_limit_gb * 1024 ** 3) return fail(reply, 423, "Bandwidth limit exceeded.")
  }
  const [peer] = await q(
    `select private_key_enc, host(address) as address from wireguard_peers where user_id = $1 and server_id = $2`,
    [userId, serverId]
  )
  if (!peer) return fail(reply, 500, "An unexpected error occurred.")
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
  return reply
    .header("content-type", "text/plain; charset=utf-8")
    .header("content-disposition", `attachment; filename="${slug(server.name)}.conf"`)
    .header("cache-control", "no-store")
    .send(body)
})

app.setNotFoundHandler((_request, reply) => fail(reply, 404, "Resource not found."))

await app.listen({ port, host: "127.0.0.1" })
console.log(`fastify on ${port}`)
