import * as Prometheus from "../platform/Prometheus.ts"
import { Metrics } from "../platform/Metrics.ts"

/** Messages of the outbox waiting or given up, of one channel, kind and status ([D96]). */
export interface OutboxDepthRow {
  readonly channel: string
  readonly kind: string
  readonly status: "pending" | "failed"
  readonly count: number
  /** seconds since the oldest of them was written */
  readonly oldestSeconds: number
}

/** What one delivery attempt of the outbox's sender came to. */
export type OutboxAttempt = "sent" | "error" | "given_up"

/**
 * The outbox room's figures in the app's metrics registry ([D102], [D96]): depth and given-up
 * messages from the database, read once per scrape by the three gauges together (a label set seen
 * before and now empty reads 0, not absent), and the sender's attempts.
 */
export const outboxMetrics = Metrics.ofRoom(({ registry, whenConnectionFree }) => {
  const registers = [registry]
  let outboxSource: () => Promise<ReadonlyArray<OutboxDepthRow> | undefined> = () => Promise.resolve([])
  let outboxReading: Promise<ReadonlyArray<OutboxDepthRow> | undefined> | undefined
  const readOutbox = () =>
    (outboxReading ??= whenConnectionFree(outboxSource).finally(() => {
      outboxReading = undefined
    }))
  const seenDepth = new Map<string, { channel: string; kind: string }>()
  const seenOldest = new Map<string, { channel: string }>()
  const depthGauge = (status: OutboxDepthRow["status"], name: string, help: string) =>
    new Prometheus.Gauge({
      name,
      help,
      labelNames: ["channel", "kind"] as const,
      registers,
      async collect() {
        const rows = await readOutbox()
        if (rows === undefined) return
        const now = new Map<string, number>()
        for (const row of rows) {
          if (row.status !== status) continue
          const key = `${status}\u0000${row.channel}\u0000${row.kind}`
          if (!seenDepth.has(key)) seenDepth.set(key, { channel: row.channel, kind: row.kind })
          now.set(key, row.count)
        }
        for (const [key, labels] of seenDepth) if (key.startsWith(`${status}\u0000`)) this.set(labels, now.get(key) ?? 0)
      }
    })
  depthGauge("pending", "vpn_api_outbox_pending_messages", "Outbox messages waiting to be sent (first try or retry), by channel and kind.")
  depthGauge("failed", "vpn_api_outbox_failed_messages", "Outbox messages given up after 24 h of failures, still listed for admins, by channel and kind.")
  new Prometheus.Gauge({
    name: "vpn_api_outbox_oldest_pending_age_seconds",
    help: "Seconds since the oldest message still waiting in the outbox was written, by channel (0: none waits).",
    labelNames: ["channel"] as const,
    registers,
    async collect() {
      const rows = await readOutbox()
      if (rows === undefined) return
      const oldest = new Map<string, number>()
      for (const row of rows) {
        if (row.status !== "pending") continue
        oldest.set(row.channel, Math.max(oldest.get(row.channel) ?? 0, row.oldestSeconds))
        if (!seenOldest.has(row.channel)) seenOldest.set(row.channel, { channel: row.channel })
      }
      for (const [channel, labels] of seenOldest) this.set(labels, oldest.get(channel) ?? 0)
    }
  })
  const outboxAttempts = new Prometheus.Counter({
    name: "vpn_api_outbox_deliveries_total",
    help: "Delivery attempts of the outbox's sender, by channel, kind and outcome: sent, error (retried later), given_up.",
    labelNames: ["channel", "kind", "outcome"] as const,
    registers
  })
  const outboxErrors = new Prometheus.Counter({
    name: "vpn_api_outbox_send_errors_total",
    help: "Failed delivery attempts of the outbox (SMTP or endpoint errors, timeouts), by channel and kind.",
    labelNames: ["channel", "kind"] as const,
    registers
  })
  return {
    /** where the gauges read the messages waiting and given up, when scraped (`undefined`: the last figures stay) */
    depthFrom: (read: () => Promise<ReadonlyArray<OutboxDepthRow> | undefined>) => {
      outboxSource = read
    },
    /** one delivery attempt of the sender: sent, failed (to be retried), or failed and given up */
    attempt: (channel: string, kind: string, outcome: OutboxAttempt) => {
      outboxAttempts.inc({ channel, kind, outcome })
      if (outcome !== "sent") outboxErrors.inc({ channel, kind })
    }
  } as const
})
