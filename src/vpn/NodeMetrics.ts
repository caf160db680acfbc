import * as Effect from "effect/Effect"
import * as Prometheus from "../platform/Prometheus.ts"
import { Metrics } from "../platform/Metrics.ts"
import type { ServerId } from "../platform/Ids.ts"

/** A VPN node's last poll as the database keeps it ([D92]: any instance's, to the minute). */
export interface NodeSeenRow {
  readonly server: number
  /** the server's name, a second label beside its id (issue 34: nodes labelled one way) */
  readonly name: string
  readonly status: string
  readonly ageSeconds: number
}

/**
 * The vpn room's node figures in the app's metrics registry ([D102]): each node's polls through
 * this instance, and every node's last poll as the database keeps it (the same on every
 * instance, there after a restart).
 */
export const nodeMetrics = Metrics.ofRoom(({ now, registry, whenConnectionFree }) => {
  const registers = [registry]
  const polls = new Map<number, { at: number; labels: { readonly server: string } }>()
  new Prometheus.Gauge({
    name: "vpn_api_node_last_poll_age_seconds",
    help: "Seconds since each VPN node last fetched its peer list, by server id.",
    labelNames: ["server"] as const,
    registers,
    collect() {
      const at = now()
      for (const poll of polls.values()) this.set(poll.labels, Math.max(0, (at - poll.at) / 1000))
    }
  })
  const peersServed = new Prometheus.Gauge({
    name: "vpn_api_node_peers_served",
    help: "Peers in the last list each VPN node fetched, by server id.",
    labelNames: ["server"] as const,
    registers
  })
  const nodePolls = new Prometheus.Counter({
    name: "vpn_api_node_polls_total",
    help: "Peer lists fetched by VPN nodes, by server id.",
    labelNames: ["server"] as const,
    registers
  })
  let nodesSource: () => Promise<ReadonlyArray<NodeSeenRow> | undefined> = () => Promise.resolve([])
  new Prometheus.Gauge({
    name: "vpn_api_node_last_seen_age_seconds",
    help: "Seconds since each VPN node last fetched its peer list through any instance (the servers' last_seen_at, to the minute), by server id (with its name) and status; nodes never seen are absent.",
    labelNames: ["server", "server_name", "status"] as const,
    registers,
    async collect() {
      const rows = await whenConnectionFree(nodesSource)
      if (rows === undefined) return
      this.reset()
      for (const row of rows) this.set({ server: String(row.server), server_name: row.name, status: row.status }, row.ageSeconds)
    }
  })
  return {
    /** a node fetched its peer list (`GET /v1/node/peers`) */
    polled: (serverId: ServerId, peers: number) =>
      Effect.sync(() => {
        let poll = polls.get(serverId)
        if (poll === undefined) polls.set(serverId, (poll = { at: 0, labels: { server: String(serverId) } }))
        poll.at = now()
        peersServed.set(poll.labels, peers)
        nodePolls.inc(poll.labels)
      }),
    /** where the gauge of every node's last poll (database-wide) reads it, when scraped */
    seenFrom: (read: () => Promise<ReadonlyArray<NodeSeenRow> | undefined>) => {
      nodesSource = read
    }
  } as const
})
