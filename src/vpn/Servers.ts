import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import { randomToken, sha256Hex } from "../platform/Crypto.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { formatSubnet, parseSubnet } from "./Configs.ts"
import { AgentRow, agentRowColumn, AgentStatus, agentStatusOf } from "./NodeAgents.ts"
import { nodeMetrics, type NodeSeenRow } from "./NodeMetrics.ts"
import { CreatedServer, Protocol, Server, ServerRecord } from "./Domain.ts"
import { ServerId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { CreatedServer, Protocol, Server, ServerRecord }

export type ServerRow = typeof ServerRecord.Type

/** [D92]: a server as an admin sees it: every field, the node's last poll, its peers and plans. */
export const AdminServer = Schema.Struct({
  ...ServerRecord.fields,
  last_seen_at: Schema.NullOr(Schema.DateFromSelf),
  peers: Schema.Int,
  plan_ids: Schema.Array(Schema.Int),
  /** [D105]: the node agent's push stream and applied revision */
  agent: AgentStatus
})
const AdminServerRow = Schema.Struct({
  ...ServerRecord.fields,
  last_seen_at: Schema.NullOr(Schema.DateFromSelf),
  peers: Schema.Int,
  plan_ids: Schema.parseJson(Schema.Array(Schema.Int)),
  agent_row: Schema.parseJson(AgentRow)
})
/** [D105]: the row with its agent's status at `now` */
const adminServerOf =
  (now: Date) =>
  ({ agent_row, ...row }: typeof AdminServerRow.Type): typeof AdminServer.Type => ({
    ...row,
    agent: agentStatusOf(agent_row, now)
  })

/** What an admin sends to create or change a server (the API's payloads are this shape). */
export interface ServerInput {
  readonly name?: string | undefined
  readonly country?: string | undefined
  readonly city?: string | undefined
  readonly protocol?: Protocol | undefined
  readonly ip?: string | undefined
  readonly port?: number | undefined
  readonly transport?: "udp" | "tcp" | undefined
  readonly public_key?: string | undefined
  readonly subnet?: string | undefined
  readonly subnet6?: string | null | undefined
  readonly dns?: string | undefined
  readonly ca_cert?: string | undefined
  readonly status?: "active" | "maintenance" | "offline" | undefined
  readonly plan_ids?: ReadonlyArray<number> | undefined
}

export type NewServer = ServerInput & {
  readonly name: string
  readonly country: string
  readonly city: string
  readonly protocol: Protocol
  readonly ip: string
}

export const INVALID_PLAN_IDS = "The selected plan ids is invalid."

const DEFAULT_PORT: Record<Protocol, number> = { wireguard: 51820, openvpn: 1194 }
const DEFAULT_SUBNET = "10.66.0.0/16"
const DEFAULT_DNS = "1.1.1.1, 1.0.0.1"

const normalSubnet = (s: string) => formatSubnet(parseSubnet(s)!)

const Id = Schema.Struct({ id: ServerId })
const SEEN_EVERY_MS = 60_000

/** Servers and the plans that grant them. The VPN room owns `servers` and `server_plans`. */
export class Servers extends Effect.Service<Servers>()("vpn/Servers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const keys = yield* KeyGen
    const catalog = yield* Catalog
    const columns = sql`
      s.id, s.name, s.country, s.city, s.protocol, s.ip, s.port, s.transport, s.public_key,
      s.subnet::text as subnet, s.subnet6::text as subnet6, s.dns, s.ca_cert, s.status`

    const findRow = SqlSchema.findOne({
      Request: Schema.Int,
      Result: ServerRecord,
      execute: (id) => sql`select ${columns} from servers s where s.id = ${id}`
    })
    const grantedRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: ServerRecord,
      execute: (planId) => sql`
        select ${columns} from servers s join server_plans sp on sp.server_id = s.id
        where sp.plan_id = ${planId} order by s.id`
    })
    const grantRow = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.Int, planId: Schema.Int }),
      Result: Schema.Struct({ ...ServerRecord.fields, granted: Schema.Boolean }),
      execute: ({ id, planId }) => sql`
        select ${columns},
               exists(select 1 from server_plans sp where sp.server_id = s.id and sp.plan_id = ${planId}) as granted
        from servers s where s.id = ${id}`
    })
    const grantExists = SqlSchema.findOne({
      Request: Schema.Struct({ serverId: Schema.Int, planId: Schema.Int }),
      Result: Schema.Struct({ granted: Schema.Boolean }),
      execute: ({ serverId, planId }) => sql`select true as granted from server_plans where server_id = ${serverId} and plan_id = ${planId}`
    })
    const planIdsOfRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ plan_id: Schema.Int }),
      execute: (id) => sql`select plan_id from server_plans where server_id = ${id} order by plan_id`
    })
    /** [D92]: the node's poll, written at most once a minute per server */
    const markSeen = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf, before: Schema.DateFromSelf }),
      execute: ({ before, id, now }) => sql`
        update servers set last_seen_at = ${now} where id = ${id} and (last_seen_at is null or last_seen_at < ${before})`
    })
    const lastWrites = new Map<number, number>()
    const seenRows = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ id: Schema.Int, name: Schema.String, status: Schema.String, age_seconds: Schema.Number }),
      execute: (now) => sql`
        select id, name, status, greatest(0, extract(epoch from (${now}::timestamptz - last_seen_at)))::float8 as age_seconds
        from servers where last_seen_at is not null order by id`
    })
    /** [D102]: every node's last poll, read when /metrics is scraped; a failed read keeps the last figures */
    const nodesSeen: Effect.Effect<ReadonlyArray<NodeSeenRow> | undefined> = clock.now.pipe(
      Effect.flatMap(seenRows),
      Effect.map((rows) => rows.map((r): NodeSeenRow => ({ server: r.id, name: r.name, status: r.status, ageSeconds: r.age_seconds }))),
      // a slow database does not hold the scrape
      Effect.timeoutTo({ duration: "2 seconds", onTimeout: () => undefined, onSuccess: (rows) => rows }),
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("servers: last polls not read for the metrics", cause), undefined))
    )
    const runtime = yield* Effect.runtime<never>()
    const nodeFigures = yield* nodeMetrics
    nodeFigures.seenFrom(() => Runtime.runPromise(runtime)(nodesSeen))
    const adminColumns = sql`
      ${columns}, s.last_seen_at,
      (select count(*)::int from wireguard_peers p where p.server_id = s.id) as peers,
      coalesce((select json_agg(sp.plan_id order by sp.plan_id) from server_plans sp where sp.server_id = s.id), '[]')::text as plan_ids,
      ${agentRowColumn(sql)}`
    const adminPage = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Int, offset: Schema.Int }),
      Result: AdminServerRow,
      execute: ({ limit, offset }) => sql`select ${adminColumns} from servers s order by s.id limit ${limit} offset ${offset}`
    })
    const adminOne = SqlSchema.findOne({
      Request: Schema.Int,
      Result: AdminServerRow,
      execute: (id) => sql`select ${adminColumns} from servers s where s.id = ${id}`
    })
    const total = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ n: Schema.Int }),
      execute: () => sql`select count(*)::int as n from servers`
    })
    const byTokenHash = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: ServerId, node_token_hash: Schema.String }),
      execute: (hash) => sql`select id, node_token_hash from servers where node_token_hash = ${hash}`
    })
    const insertRow = SqlSchema.single({
      Request: Schema.Struct({ ...ServerRecord.fields, id: Schema.optional(Schema.Int), node_token_hash: Schema.String, now: Schema.DateFromSelf }),
      Result: Id,
      execute: (f) => sql`
        insert into servers (name, country, city, protocol, ip, port, transport, public_key, subnet, subnet6, dns, ca_cert,
                             status, node_token_hash, created_at, updated_at)
        values (${f.name}, ${f.country}, ${f.city}, ${f.protocol}, ${f.ip}, ${f.port}, ${f.transport}, ${f.public_key},
                ${f.subnet}::cidr, network(${f.subnet6}::inet), ${f.dns}, ${f.ca_cert}, ${f.status}, ${f.node_token_hash}, ${f.now}, ${f.now})
        returning id`
    })
    const updateRow = SqlSchema.void({
      Request: Schema.Struct({ ...ServerRecord.fields, now: Schema.DateFromSelf }),
      execute: (f) => sql`
        update servers set name = ${f.name}, country = ${f.country}, city = ${f.city}, protocol = ${f.protocol},
          ip = ${f.ip}, port = ${f.port}, transport = ${f.transport}, public_key = ${f.public_key},
          subnet = ${f.subnet}::cidr, subnet6 = network(${f.subnet6}::inet), dns = ${f.dns}, ca_cert = ${f.ca_cert}, status = ${f.status}, updated_at = ${f.now}
        where id = ${f.id}`
    })
    /** [D90]: the allocation's mark and released hosts rebuilt from the peers (a subnet changed) */
    const reindexHosts = SqlSchema.void({
      Request: Schema.Int,
      execute: (id) => sql`select vpn_reindex_hosts(${id})`
    })
    const clearPlans = SqlSchema.void({
      Request: Schema.Int,
      execute: (id) => sql`delete from server_plans where server_id = ${id}`
    })
    const grant = SqlSchema.void({
      Request: Schema.Struct({ serverId: Schema.Int, planId: Schema.Int }),
      execute: ({ planId, serverId }) => sql`insert into server_plans (server_id, plan_id) values (${serverId}, ${planId}) on conflict do nothing`
    })

    const setPlans = (id: number, planIds: ReadonlyArray<number>) =>
      Effect.gen(function* () {
        yield* clearPlans(id)
        for (const planId of new Set(planIds)) yield* grant({ serverId: id, planId })
      })

    /** 422 `errors.plan_ids` unless every id is a plan of the catalogue */
    const checkPlans = (planIds: ReadonlyArray<number> | undefined) =>
      Effect.gen(function* () {
        if (planIds === undefined) return
        const wanted = [...new Set(planIds)]
        const known = new Set(yield* catalog.existingPlanIds(wanted))
        if (wanted.some((id) => !known.has(id))) return yield* Effect.fail(ValidationError.field("plan_ids", INVALID_PLAN_IDS))
      })

    const find = (id: number) => findRow(id).pipe(Effect.orDie)

    /** [D70]: a server with the defaults of [D50]; a WireGuard server without a key gets one, shown once */
    const create = (input: NewServer) =>
      Effect.gen(function* () {
        yield* checkPlans(input.plan_ids)
        const generated = input.protocol === "wireguard" && input.public_key === undefined ? Option.some(yield* keys.x25519) : Option.none()
        const nodeToken = `node_${randomToken(40)}`
        const now = yield* clock.now
        const fields = {
          name: input.name,
          country: input.country,
          city: input.city,
          protocol: input.protocol,
          ip: input.ip,
          port: input.port ?? DEFAULT_PORT[input.protocol],
          transport: input.transport ?? "udp",
          public_key: input.public_key ?? Option.getOrNull(Option.map(generated, (k) => k.publicKey)),
          subnet: normalSubnet(input.subnet ?? DEFAULT_SUBNET),
          subnet6: input.subnet6 ?? null,
          dns: input.dns ?? DEFAULT_DNS,
          ca_cert: input.ca_cert ?? null,
          status: input.status ?? "active"
        } as const
        const server = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const { id } = yield* insertRow({ ...fields, node_token_hash: sha256Hex(nodeToken), now })
              yield* setPlans(id, input.plan_ids ?? [])
              return { ...fields, id }
            })
          )
          .pipe(Effect.orDie)
        const created: typeof CreatedServer.Type = {
          ...server,
          node_token: nodeToken,
          ...Option.match(generated, { onNone: () => ({}), onSome: (k) => ({ private_key: k.privateKey }) })
        }
        return created
      })

    /** [D70]: changes what is given; a protocol change moves a default port to the new default */
    const update = (id: number, input: ServerInput) =>
      Effect.gen(function* () {
        const found = yield* find(id)
        if (Option.isNone(found)) return yield* Effect.fail(new NotFound())
        const s = found.value
        yield* checkPlans(input.plan_ids)
        const protocol = input.protocol ?? s.protocol
        const server: ServerRow = {
          id: s.id,
          name: input.name ?? s.name,
          country: input.country ?? s.country,
          city: input.city ?? s.city,
          protocol,
          ip: input.ip ?? s.ip,
          port: input.port ?? (protocol !== s.protocol && s.port === DEFAULT_PORT[s.protocol] ? DEFAULT_PORT[protocol] : s.port),
          transport: input.transport ?? s.transport,
          public_key: input.public_key ?? s.public_key,
          subnet: input.subnet !== undefined ? normalSubnet(input.subnet) : s.subnet,
          subnet6: input.subnet6 !== undefined ? input.subnet6 : s.subnet6,
          dns: input.dns ?? s.dns,
          ca_cert: input.ca_cert ?? s.ca_cert,
          status: input.status ?? s.status
        }
        const now = yield* clock.now
        yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* updateRow({ ...server, now })
              if (server.subnet !== s.subnet) yield* reindexHosts(id)
              if (input.plan_ids !== undefined) yield* setPlans(id, input.plan_ids)
            })
          )
          .pipe(Effect.orDie)
        return server
      })

    return {
      find,
      grantedToPlan: (planId: number) => grantedRows(planId).pipe(Effect.orDie),
      grants: (serverId: ServerId, planId: number) => grantExists({ serverId, planId }).pipe(Effect.map(Option.isSome), Effect.orDie),
      /** the server and whether the plan grants it, in one query */
      findGranted: (id: number, planId: number) =>
        grantRow({ id, planId }).pipe(Effect.map(Option.map(({ granted, ...server }) => ({ server, granted }))), Effect.orDie),
      /** [D92]: a page of servers for admins, oldest first */
      adminPage: (page: number, perPage: number) =>
        Effect.all({ rows: adminPage({ limit: perPage, offset: (page - 1) * perPage }), total: total(undefined), now: clock.now }).pipe(
          Effect.map(({ now, rows, total }) => ({ rows: rows.map(adminServerOf(now)), total: total.n })),
          Effect.orDie
        ),
      adminOne: (id: number) =>
        Effect.all([adminOne(id), clock.now]).pipe(
          Effect.map(([row, now]) => Option.map(row, adminServerOf(now))),
          Effect.orDie
        ),
      /** the plans that grant the server */
      planIdsOf: (serverId: ServerId) =>
        planIdsOfRows(serverId).pipe(
          Effect.map((rows) => rows.map((r) => r.plan_id)),
          Effect.orDie
        ),
      /** [D92]: the node polled now; a write at most once a minute per server (and per instance) */
      seen: (serverId: ServerId) =>
        Effect.flatMap(clock.now, (now) => {
          const last = lastWrites.get(serverId)
          if (last !== undefined && Math.abs(now.getTime() - last) < SEEN_EVERY_MS) return Effect.void
          lastWrites.set(serverId, now.getTime())
          return markSeen({ id: serverId, now, before: new Date(now.getTime() - SEEN_EVERY_MS) }).pipe(Effect.orDie)
        }),
      /** the server whose node token has this SHA-256 ([D54]) */
      byNodeTokenHash: (hash: string) => byTokenHash(hash).pipe(Effect.orDie),
      create,
      update
    } as const
  }),
  dependencies: [Catalog.Default]
}) {}
