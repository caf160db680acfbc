import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Prometheus from "./Prometheus.ts"
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
  /** password hashes waiting for a thread of the hashing pool, and running on one */
  readonly hashQueued: (delta: 1 | -1) => void
  readonly hashRunning: (delta: 1 | -1) => void
  /** the text of `GET /metrics` */
  readonly exposition: Effect.Effect<string>
  /** the metrics' clock in epoch milliseconds (the app's clock: node poll ages, job times) */
  readonly now: () => number
  /** a database read for a scrape, skipped (`undefined`) when no connection is free */
  readonly whenConnectionFree: <A>(read: () => Promise<A | undefined>) => Promise<A | undefined>
}

export class Metrics extends Context.Tag("Metrics")<Metrics, MetricsShape>() {
  /**
   * A room's own figures in this registry, made once per registry by `make` (each room declares
   * its metrics beside its code: outbox, vpn nodes, jobs, webhooks); the room asks for them where
   * it records.
   */
  static readonly ofRoom = <A>(make: (metrics: MetricsShape) => A): Effect.Effect<A, never, Metrics> => {
    const made = new WeakMap<Prometheus.Registry, A>()
    return Effect.map(Metrics, (metrics) => {
      let figures = made.get(metrics.registry)
      if (figures === undefined) made.set(metrics.registry, (figures = make(metrics)))
      return figures
    })
  }

  /** A fresh registry per app; node poll ages and job times on the app's clock. */
  static readonly Live: Layer.Layer<Metrics, never, AppClock> = Layer.effect(
    Metrics,
    Effect.map(AppClock, (clock) => makeMetrics(clock))
  )
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

  /**
   * A scrape never queues for a database connection: with every connection busy (or queries
   * already waiting) the figures read from the database keep their last values this time.
   */
  const whenConnectionFree = <A>(read: () => Promise<A | undefined>): Promise<A | undefined> => {
    const pool = databaseFigures()
    if (pool.max > 0 && (pool.waiting > 0 || pool.inUse >= pool.max)) return Promise.resolve(undefined)
    return read().catch(() => undefined)
  }

  const route = (template: string): RouteFigures => {
    // label sets by method, then status: made on first use, reused by every later request
    const byMethod = new Map<
      string,
      { readonly route: { method: string; route: string }; readonly byStatus: Map<number, { method: string; route: string; status: string }> }
    >()
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
      if (labels === undefined) kindLabels.set(kind, (labels = { kind }))
      databaseErrors.inc(labels)
    },
    rateLimitRefused: (limit) => {
      let labels = limitLabels.get(limit)
      if (labels === undefined) limitLabels.set(limit, (labels = { limit }))
      refusals.inc(labels)
    },
    hashQueued: (delta) => void (queued += delta),
    hashRunning: (delta) => void (running += delta),
    exposition: Effect.promise(() => registry.metrics()),
    now,
    whenConnectionFree
  }
}
