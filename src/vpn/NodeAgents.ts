import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import * as Prometheus from "../platform/Prometheus.ts"
import { AppClock } from "../platform/Clock.ts"
import { Metrics } from "../platform/Metrics.ts"
import { AgentStatus } from "./Domain.ts"
import type { ServerId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { AgentStatus }

/**
 * [D105]: each server's node agent as the push streams see it (`vpn_node_agents`, migration 22):
 * the streams open to it on any instance, the revision it last applied, its version and when it
 * was last heard from. An agent is `connected` while a stream is open and it was heard from in the
 * last `HEARD_WITHIN_MS` (it reports at least every 30 s): an instance that died with a stream
 * open leaves a count behind that this bound ignores.
 */

/** an agent not heard from for this long is not connected, whatever the stream count says */
export const HEARD_WITHIN_MS = 90_000

/** The agent's row with the log's newest revision, as one JSON column of the admin server rows. */
export const AgentRow = Schema.NullOr(
  Schema.Struct({
    streams: Schema.Number,
    applied_revision: Schema.NullOr(Schema.Number),
    version: Schema.NullOr(Schema.String),
    last_seen_at: Schema.NullOr(Schema.Date),
    head: Schema.NullOr(Schema.Number)
  })
)
export type AgentRow = typeof AgentRow.Type

/** the admin server rows' `agent_row` column (the server's alias is `s`) */
export const agentRowColumn = (sql: SqlClient.SqlClient) =>
  sql`coalesce((select json_build_object('streams', a.streams, 'applied_revision', a.applied_revision, 'version', a.version,
         'last_seen_at', a.last_seen_at, 'head', (select max(revision) from vpn_peer_changes))
       from vpn_node_agents a where a.server_id = s.id)::text, 'null') as agent_row`

/** [D105]: the status an admin sees, at `now` */
export const agentStatusOf = (row: AgentRow, now: Date): AgentStatus => {
  if (row === null) return { connected: false, applied_revision: null, lag: null, version: null, last_seen_at: null }
  const heard = row.last_seen_at !== null && now.getTime() - row.last_seen_at.getTime() <= HEARD_WITHIN_MS
  return {
    connected: row.streams > 0 && heard,
    applied_revision: row.applied_revision,
    lag: row.applied_revision === null || row.head === null ? null : Math.max(0, row.head - row.applied_revision),
    version: row.version,
    last_seen_at: row.last_seen_at
  }
}

const AgentGaugeRow = Schema.Struct({ id: Schema.Int, name: Schema.String, agent_row: Schema.parseJson(AgentRow) })

export class NodeAgents extends Effect.Service<NodeAgents>()("vpn/NodeAgents", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const metrics = yield* Metrics

    const open = SqlSchema.void({
      Request: Schema.Struct({ serverId: Schema.Int, now: Schema.DateFromSelf }),
      execute: ({ now, serverId }) => sql`
        insert into vpn_node_agents (server_id, streams, last_seen_at) values (${serverId}, 1, ${now})
        on conflict (server_id) do update set streams = vpn_node_agents.streams + 1, last_seen_at = excluded.last_seen_at`
    })
    const close = SqlSchema.void({
      Request: Schema.Int,
      execute: (serverId) => sql`
        update vpn_node_agents set streams = greatest(streams - 1, 0) where server_id = ${serverId}`
    })
    const applied = SqlSchema.single({
      Request: Schema.Struct({ serverId: Schema.Int, revision: Schema.Number, version: Schema.String, now: Schema.DateFromSelf }),
      Result: Schema.Struct({ lag: Schema.Number }),
      execute: ({ now, revision, serverId, version }) => sql`
        insert into vpn_node_agents (server_id, streams, applied_revision, version, last_seen_at)
        values (${serverId}, 0, ${revision}, ${version}, ${now})
        on conflict (server_id) do update set
          applied_revision = excluded.applied_revision, version = excluded.version, last_seen_at = excluded.last_seen_at
        returning greatest(0, coalesce((select max(revision) from vpn_peer_changes), 0) - ${revision})::float8 as lag`
    })
    const gaugeRows = SqlSchema.findAll({
      Request: Schema.Void,
      Result: AgentGaugeRow,
      execute: () => sql`select s.id, s.name, ${agentRowColumn(sql)} from servers s
        where exists (select 1 from vpn_node_agents a where a.server_id = s.id) order by s.id`
    })

    // [D105] in /metrics: each node's agent, read from the database when scraped (every instance agrees)
    const runtime = yield* Effect.runtime<never>()
    const read = () =>
      Runtime.runPromise(runtime)(
        Effect.all([gaugeRows(undefined), clock.now]).pipe(
          Effect.map(([rows, now]) => rows.map((r) => ({ id: r.id, name: r.name, status: agentStatusOf(r.agent_row, now) }))),
          Effect.timeout("2 seconds")
        )
      ).catch(() => undefined)
    let reading: ReturnType<typeof read> | undefined
    // the two gauges read once per scrape
    const readOnce = () => (reading ??= read().finally(() => setTimeout(() => (reading = undefined), 0)))
    const registers = [metrics.registry]
    new Prometheus.Gauge({
      name: "vpn_api_node_agent_connected",
      help: "Whether each VPN node's agent holds a push stream now (1) or not (0), by server id, with its name ([D105]).",
      labelNames: ["server", "server_name"] as const,
      registers,
      async collect() {
        const rows = await readOnce()
        if (rows === undefined) return
        this.reset()
        for (const r of rows) this.set({ server: String(r.id), server_name: r.name }, r.status.connected ? 1 : 0)
      }
    })
    new Prometheus.Gauge({
      name: "vpn_api_node_agent_lag_revisions",
      help: "Revisions of the node change log each VPN node's agent has not applied yet, by server id, with its name ([D105]).",
      labelNames: ["server", "server_name"] as const,
      registers,
      async collect() {
        const rows = await readOnce()
        if (rows === undefined) return
        this.reset()
        for (const r of rows) if (r.status.lag !== null) this.set({ server: String(r.id), server_name: r.name }, r.status.lag)
      }
    })

    return {
      /** a stream to the server's agent opened (on this instance) */
      opened: (serverId: ServerId) => Effect.flatMap(clock.now, (now) => open({ serverId, now })).pipe(Effect.orDie),
      /** that stream closed */
      closed: (serverId: ServerId) => close(serverId).pipe(Effect.orDie),
      /** the agent applied `revision` (and is alive); how many revisions it is behind */
      applied: (serverId: ServerId, revision: number, version: string) =>
        Effect.flatMap(clock.now, (now) => applied({ serverId, revision, version, now })).pipe(
          Effect.map((r) => r.lag),
          Effect.orDie
        )
    } as const
  })
}) {}
