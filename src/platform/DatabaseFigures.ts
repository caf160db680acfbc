/**
 * The database pool's use and the queries that failed, as the SQL drivers see them ([D102]):
 * per process (every pool this process opened), read by the metrics when `/metrics` is scraped.
 * The drivers report here; they know nothing of Prometheus.
 */
import { sqlStateOf } from "./SqlErrors.ts"

/** What an open pool says of itself. */
export interface PoolReader {
  readonly max: number
  /** connections busy now (a query running, or held by a transaction) */
  readonly inUse: () => number
  /** queries and transactions waiting for a connection */
  readonly waiting: () => number
}

const pools = new Set<PoolReader>()
const queryErrors = new Map<string, number>()

/** a pool opened: its figures count until the returned function is called (the pool closed) */
export const registerPool = (reader: PoolReader): (() => void) => {
  pools.add(reader)
  return () => void pools.delete(reader)
}

/**
 * A failed query, by its SQLSTATE class (`23` integrity, `22` data, `08` connection, ...), or
 * `connection` when no server answered (a driver or socket error without SQLSTATE).
 */
export const countQueryError = (cause: unknown) => {
  const kind = sqlStateOf(cause)?.slice(0, 2) ?? "connection"
  queryErrors.set(kind, (queryErrors.get(kind) ?? 0) + 1)
}

export const databaseFigures = () => {
  let max = 0
  let inUse = 0
  let waiting = 0
  for (const pool of pools) {
    max += pool.max
    inUse += pool.inUse()
    waiting += pool.waiting()
  }
  return { max, inUse, waiting, queryErrors: queryErrors as ReadonlyMap<string, number> }
}
