import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"

export type Protocol = "wireguard" | "openvpn"

/** A server row with everything configs need ([D50]). */
export interface ServerRow {
  readonly id: number
  readonly name: string
  readonly country: string
  readonly city: string
  readonly protocol: Protocol
  readonly ip: string
  readonly port: number
  readonly transport: "udp" | "tcp"
  readonly public_key: string | null
  readonly subnet: string
  readonly dns: string
  readonly ca_cert: string | null
  readonly status: string
}

/** The spec's Server fields, exactly. */
export const toServer = (s: ServerRow) => ({
  id: s.id,
  name: s.name,
  country: s.country,
  city: s.city,
  protocol: s.protocol,
  ip: s.ip,
  status: s.status
})

export interface ServerFields {
  readonly name: string
  readonly country: string
  readonly city: string
  readonly protocol: Protocol
  readonly ip: string
  readonly port: number
  readonly transport: "udp" | "tcp"
  readonly public_key: string | null
  readonly subnet: string
  readonly dns: string
  readonly ca_cert: string | null
  readonly status: string
}

/** Servers and the plans that grant them. The VPN room owns `servers` and `server_plans`. */
export class Servers extends Context.Tag("vpn/Servers")<Servers, {
  readonly find: (id: number) => Effect.Effect<Option.Option<ServerRow>>
  readonly grantedToPlan: (planId: number) => Effect.Effect<ReadonlyArray<ServerRow>>
  readonly grants: (serverId: number, planId: number) => Effect.Effect<boolean>
  /** the server and whether the plan grants it, in one query (issue 8) */
  readonly findGranted: (id: number, planId: number) => Effect.Effect<Option.Option<{ readonly server: ServerRow; readonly granted: boolean }>>
  /** the ids among `planIds` that exist */
  readonly existingPlans: (planIds: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<number>>
  readonly create: (fields: ServerFields, planIds: ReadonlyArray<number>, nodeTokenHash: string) => Effect.Effect<ServerRow>
  readonly update: (id: number, fields: ServerFields, planIds: ReadonlyArray<number> | undefined) => Effect.Effect<ServerRow>
}>() {
  static readonly Live = Layer.effect(
    Servers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const columns = sql`
        s.id, s.name, s.country, s.city, s.protocol, s.ip, s.port, s.transport, s.public_key,
        s.subnet::text as subnet, s.dns, s.ca_cert, s.status`
      const one = (rows: ReadonlyArray<ServerRow>) => Option.fromNullable(rows[0])
      const find = (id: number) => sql<ServerRow>`select ${columns} from servers s where s.id = ${id}`.pipe(Effect.map(one))
      const setPlans = (id: number, planIds: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          yield* sql`delete from server_plans where server_id = ${id}`
          for (const planId of new Set(planIds)) {
            yield* sql`insert into server_plans (server_id, plan_id) values (${id}, ${planId}) on conflict do nothing`
          }
        })
      return {
        find: (id) => find(id).pipe(Effect.orDie),
        grantedToPlan: (planId) =>
          sql<ServerRow>`
            select ${columns} from servers s join server_plans sp on sp.server_id = s.id
            where sp.plan_id = ${planId} order by s.id`.pipe(Effect.orDie),
        findGranted: (id, planId) =>
          sql<ServerRow & { granted: boolean }>`
            select ${columns},
                   exists(select 1 from server_plans sp where sp.server_id = s.id and sp.plan_id = ${planId}) as granted
            from servers s where s.id = ${id}`.pipe(
            Effect.map((rows) =>
              Option.map(Option.fromNullable(rows[0]), ({ granted, ...server }) => ({ server: server as ServerRow, granted }))
            ),
            Effect.orDie
          ),
        grants: (serverId, planId) =>
          sql`select 1 from server_plans where server_id = ${serverId} and plan_id = ${planId}`.pipe(
            Effect.map((rows) => rows.length > 0),
            Effect.orDie
          ),
        existingPlans: (planIds) =>
          planIds.length === 0
            ? Effect.succeed([])
            : sql<{ id: number }>`select id from plans where id in ${sql.in([...new Set(planIds)])}`.pipe(
              Effect.map((rows) => rows.map((r) => r.id)),
              Effect.orDie
            ),
        create: (f, planIds, nodeTokenHash) =>
          sql.withTransaction(Effect.gen(function*() {
            const now = yield* clock.now
            const [row] = yield* sql<{ id: number }>`
              insert into servers (name, country, city, protocol, ip, port, transport, public_key, subnet, dns, ca_cert,
                                   status, node_token_hash, created_at, updated_at)
              values (${f.name}, ${f.country}, ${f.city}, ${f.protocol}, ${f.ip}, ${f.port}, ${f.transport}, ${f.public_key},
                      ${f.subnet}::cidr, ${f.dns}, ${f.ca_cert}, ${f.status}, ${nodeTokenHash}, ${now}, ${now})
              returning id`
            yield* setPlans(row!.id, planIds)
            return Option.getOrThrow(yield* find(row!.id))
          })).pipe(Effect.orDie),
        update: (id, f, planIds) =>
          sql.withTransaction(Effect.gen(function*() {
            const now = yield* clock.now
            yield* sql`
              update servers set name = ${f.name}, country = ${f.country}, city = ${f.city}, protocol = ${f.protocol},
                ip = ${f.ip}, port = ${f.port}, transport = ${f.transport}, public_key = ${f.public_key},
                subnet = ${f.subnet}::cidr, dns = ${f.dns}, ca_cert = ${f.ca_cert}, status = ${f.status}, updated_at = ${now}
              where id = ${id}`
            if (planIds !== undefined) yield* setPlans(id, planIds)
            return Option.getOrThrow(yield* find(id))
          })).pipe(Effect.orDie)
      }
    })
  )
}
