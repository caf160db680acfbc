import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Prometheus from "prom-client"
import { AppClock } from "./Clock.ts"
import { databaseFigures } from "./DatabaseFigures.ts"

/** What `GET /metrics` answers with: the Prometheus text format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = Prometheus.Registry.PROMETHEUS_CONTENT_TYPE

/** The route label of a request no route of the API matched (its path is never a label). */
export const UNMATCHED_ROUTE = "unmatched"

/** Seconds, from 1 ms to 10 s: the answers of this API sit in the low milliseconds. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])

/** The figures of one route template, its label sets made once per method and status. */
export interface RouteFigures {
  readonly record: (method: string, status: number, seconds: number) => void
}

/** How the database failed a request, as the error mapping tells it. */
export type DatabaseErrorKind = "connection_lost" | "unstorable_input" | "query"

/** What one run of the jobs did, as the metrics show it (rows per step). */
export interface JobsRun {
  readonly skipped: boolean
  readonly seconds: number
  readonly rows: Readonly<Record<string, number>>
}

/** Messages of the outbox waiting or given up, of one channel, kind and status ([D96]). */
export interface OutboxDepthRow {
  readonly channel: string
  readonly kind: string
  readonly status: "pending" | "failed"
  readonly count: number
  /** seconds since the oldest of them was written */
  readonly oldestSeconds: number
}

/** A VPN node's last poll as the database keeps it ([D92]: any instance's, to the minute). */
export interface NodeSeenRow {
  readonly server: number
  readonly status: string
  readonly ageSeconds: number
}

/** What one delivery attempt of the outbox's sender came to. */
export type OutboxAttempt = "sent" | "error" | "given_up"

/**
 * The figures of [D102], in one prom-client `Registry` of this app (not prom-client's global
 * one: two apps in one process, as in the tests, keep their own). The rooms and the HTTP layer
 * record through it; `GET /metrics` renders it.
 */
export interface MetricsShape {
  readonly registry: Prometheus.Registry
  /** the recorder of one route template (`/v1/invoices/:invoice`, never a raw path) */
  readonly route: (template: string) => RouteFigures
  /** where the in-flight gauge reads the requests being answered (the server's own count) */
  readonly countInFlight: (read: () => number) => void
  readonly databaseError: (kind: DatabaseErrorKind) => void
  /** a request refused by the rate limit `limit` (`login`, ..., `general`) */
  readonly rateLimitRefused: (limit: string) => void
  readonly jobsRan: (run: JobsRun) => Effect.Effect<void>
  readonly jobsFailed: (seconds: number) => Effect.Effect<void>
  /** password hashes waiting for a thread of the hashing pool, and running on one */
  readonly hashQueued: (delta: 1 | -1) => void
  readonly hashRunning: (delta: 1 | -1) => void
  /** a node fetched its peer list (`GET /v1/node/peers`) */
  readonly nodePolled: (serverId: number, peers: number) => Effect.Effect<void>
  /**
   * where the outbox gauges read the messages waiting and given up, when scraped (the database's
   * count, the same on every instance); `undefined` when it could not be read (the last figures stay)
   */
  readonly outboxDepthFrom: (read: () => Promise<ReadonlyArray<OutboxDepthRow> | undefined>) => void
  /** one delivery attempt of the outbox's sender: sent, failed (to be retried), or failed and given up */
  readonly outboxAttempt: (channel: string, kind: string, outcome: OutboxAttempt) => void
  /** where the gauge of every node's last poll (database-wide) reads it, when scraped */
  readonly nodesSeenFrom: (read: () => Promise<ReadonlyArray<NodeSeenRow> | undefined>) => void
  /** the text of `GET /metrics` */
  readonly exposition: Effect.Effect<string>
}

export class Metrics extends Context.Tag("Metrics")<Metrics, MetricsShape>() {
  /** A fresh registry per app; node poll ages and job times on the app's clock. */
  static readonly Live: Layer.Layer<Metrics, never, AppClock> = Layer.effect(Metrics, Effect.map(AppClock, (clock) => makeMetrics(clock)))
}

const makeMetrics = (clock: AppClock["Type"]): MetricsShape => {
  const registry = new Prometheus.Registry()
  const registers = [registry]
  const now = () => Effect.runSync(clock.now).getTime()

  const requests = new Prometheus.Counter({
    name: "vpn_api_http_requests_total",
    help: "HTTP requests answered, by method, route template and status.",
    labelNames: ["method", "route", "status"] as const,
    registers
  })
  const latency = new Prometheus.Histogram({
    name: "vpn_api_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by method and route template.",
    labelNames: ["method", "route"] as const,
    buckets: LATENCY_BUCKETS,
    registers
  })
  let inFlight = () => 0
  new Prometheus.Gauge({
    name: "vpn_api_http_requests_in_flight",
    help: "HTTP requests being answered now.",
    registers,
    collect() {
      this.set(inFlight())
    }
  })
  const databaseErrors = new Prometheus.Counter({
    name: "vpn_api_database_errors_total",
    help: "Requests failed by the database: connection lost (503), input it cannot store (422), other query errors (500).",
    labelNames: ["kind"] as const,
    registers
  })
  // the pools of this process and every failed query, read from the drivers when scraped
  new Prometheus.Gauge({
    name: "vpn_api_database_pool_max_connections",
    help: "Connections the database pools of this process may open.",
    registers,
    collect() {
      this.set(databaseFigures().max)
    }
  })
  new Prometheus.Gauge({
    name: "vpn_api_database_pool_connections_in_use",
    help: "Database connections busy now: a query running or a transaction holding one.",
    registers,
    collect() {
      this.set(databaseFigures().inUse)
    }
  })
  new Prometheus.Gauge({
    name: "vpn_api_database_pool_waiting",
    help: "Queries and transactions waiting for a database connection.",
    registers,
    collect() {
      this.set(databaseFigures().waiting)
    }
  })
  new Prometheus.Counter({
    name: "vpn_api_database_query_errors_total",
    help: "Database queries that failed, by SQLSTATE class (23 integrity, 22 data, 40 rollback, ...) or connection (no server answer).",
    labelNames: ["sqlstate_class"] as const,
    registers,
    collect() {
      this.reset()
      for (const [kind, count] of databaseFigures().queryErrors) this.inc({ sqlstate_class: kind }, count)
    }
  })
  const refusals = new Prometheus.Counter({
    name: "vpn_api_rate_limit_refusals_total",
    help: "Requests refused with 429, by rate limit.",
    labelNames: ["limit"] as const,
    registers
  })
  const jobRuns = new Prometheus.Counter({
    name: "vpn_api_jobs_runs_total",
    help: "Runs of the scheduled jobs: done, skipped (another instance held the lock) or failed.",
    labelNames: ["outcome"] as const,
    registers
  })
  const jobLastRun = new Prometheus.Gauge({
    name: "vpn_api_jobs_last_run_timestamp_seconds",
    help: "When the last run of the jobs ended (Unix time).",
    registers
  })
  const jobDuration = new Prometheus.Gauge({
    name: "vpn_api_jobs_last_run_duration_seconds",
    help: "How long the last run of the jobs took.",
    registers
  })
  const jobRows = new Prometheus.Counter({
    name: "vpn_api_jobs_rows_total",
    help: "Rows the jobs changed, by step.",
    labelNames: ["step"] as const,
    registers
  })
  let queued = 0
  let running = 0
  new Prometheus.Gauge({
    name: "vpn_api_password_hashes_queued",
    help: "Password hashes and verifications waiting for a thread of the hashing pool.",
    registers,
    collect() {
      this.set(queued)
    }
  })
  new Prometheus.Gauge({
    name: "vpn_api_password_hashes_running",
    help: "Password hashes and verifications running now.",
    registers,
    collect() {
      this.set(running)
    }
  })
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

  /**
   * A scrape never queues for a database connection: with every connection busy (or queries
   * already waiting) the figures read from the database keep their last values this time.
   */
  const whenConnectionFree = <A>(read: () => Promise<A | undefined>): Promise<A | undefined> => {
    const pool = databaseFigures()
    if (pool.max > 0 && (pool.waiting > 0 || pool.inUse >= pool.max)) return Promise.resolve(undefined)
    return read().catch(() => undefined)
  }

  // every node's last poll as the database keeps it: the same on every instance, there after a restart
  let nodesSource: () => Promise<ReadonlyArray<NodeSeenRow> | undefined> = () => Promise.resolve([])
  new Prometheus.Gauge({
    name: "vpn_api_node_last_seen_age_seconds",
    help: "Seconds since each VPN node last fetched its peer list through any instance (the servers' last_seen_at, to the minute), by server id and status; nodes never seen are absent.",
    labelNames: ["server", "status"] as const,
    registers,
    async collect() {
      const rows = await whenConnectionFree(nodesSource)
      if (rows === undefined) return
      this.reset()
      for (const row of rows) this.set({ server: String(row.server), status: row.status }, row.ageSeconds)
    }
  })

  // the outbox ([D96]): depth and given-up messages from the database, read once per scrape by
  // the three gauges together; a label set seen before and now empty reads 0, not absent
  let outboxSource: () => Promise<ReadonlyArray<OutboxDepthRow> | undefined> = () => Promise.resolve([])
  let outboxReading: Promise<ReadonlyArray<OutboxDepthRow> | undefined> | undefined
  const readOutbox = () =>
    outboxReading ??= whenConnectionFree(outboxSource).finally(() => {
      outboxReading = undefined
    })
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

  const route = (template: string): RouteFigures => {
    // label sets by method, then status: made on first use, reused by every later request
    const byMethod = new Map<string, { readonly route: { method: string; route: string }; readonly byStatus: Map<number, { method: string; route: string; status: string }> }>()
    const labelsOf = (rawMethod: string) => {
      // any other method token is one label: a client cannot grow the map
      const method = METHODS.has(rawMethod) ? rawMethod : "OTHER"
      let entry = byMethod.get(method)
      if (entry === undefined) {
        entry = { route: { method, route: template }, byStatus: new Map() }
        byMethod.set(method, entry)
      }
      return entry
    }
    return {
      record: (method, status, seconds) => {
        const entry = labelsOf(method)
        let labels = entry.byStatus.get(status)
        if (labels === undefined) {
          labels = { ...entry.route, status: String(status) }
          entry.byStatus.set(status, labels)
        }
        requests.inc(labels)
        latency.observe(entry.route, seconds)
      }
    }
  }

  const limitLabels = new Map<string, { limit: string }>()
  const kindLabels = new Map<DatabaseErrorKind, { kind: DatabaseErrorKind }>()

  return {
    registry,
    route,
    countInFlight: (read) => {
      inFlight = read
    },
    databaseError: (kind) => {
      let labels = kindLabels.get(kind)
      if (labels === undefined) kindLabels.set(kind, labels = { kind })
      databaseErrors.inc(labels)
    },
    rateLimitRefused: (limit) => {
      let labels = limitLabels.get(limit)
      if (labels === undefined) limitLabels.set(limit, labels = { limit })
      refusals.inc(labels)
    },
    jobsRan: (run) =>
      Effect.sync(() => {
        jobRuns.inc({ outcome: run.skipped ? "skipped" : "done" })
        jobLastRun.set(now() / 1000)
        jobDuration.set(run.seconds)
        for (const [step, rows] of Object.entries(run.rows)) jobRows.inc({ step }, rows)
      }),
    jobsFailed: (seconds) =>
      Effect.sync(() => {
        jobRuns.inc({ outcome: "failed" })
        jobLastRun.set(now() / 1000)
        jobDuration.set(seconds)
      }),
    hashQueued: (delta) => void (queued += delta),
    hashRunning: (delta) => void (running += delta),
    nodePolled: (serverId, peers) =>
      Effect.map(clock.now, (at) => {
        let poll = polls.get(serverId)
        if (poll === undefined) polls.set(serverId, poll = { at: 0, labels: { server: String(serverId) } })
        poll.at = at.getTime()
        peersServed.set(poll.labels, peers)
        nodePolls.inc(poll.labels)
      }),
    nodesSeenFrom: (read) => {
      nodesSource = read
    },
    outboxDepthFrom: (read) => {
      outboxSource = read
    },
    outboxAttempt: (channel, kind, outcome) => {
      outboxAttempts.inc({ channel, kind, outcome })
      if (outcome !== "sent") outboxErrors.inc({ channel, kind })
    },
    exposition: Effect.promise(() => registry.metrics())
  }
}
