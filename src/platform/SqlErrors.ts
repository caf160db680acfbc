import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/**
 * Input the database refuses to store (a NUL character, a number out of range, ...): a 422
 * safety net behind the field schemas, never a 500.
 */
export const isUnstorableInput = (error: unknown): boolean => {
  if (!(error instanceof SqlError)) return false
  const code = causeCode(error) ?? ""
  return ["22021", "22P05", "22001", "22003", "22P02", "22007", "22008", "54000"].includes(code)
}

const bunConnectionCodes = new Set([
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT"
])

const errnoConnectionCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ENOENT"])

const causeCode = (error: SqlError): string | undefined =>
  typeof error.cause === "object" && error.cause !== null && "code" in error.cause
    ? String((error.cause as { code: unknown }).code)
    : undefined

/**
 * A lost connection, not a bad query: the database is unreachable (503). Read from the error's
 * code, never its text: a server's SQLSTATE says exactly what happened (only the connection
 * classes, and a write refused by a node that is not the primary yet, are "lost"); Bun.SQL and the socket layer name their connection failures; a driver
 * error with no code at all (`pg`'s "Connection terminated") never reached a server.
 */
export const isConnectionLoss = (error: unknown): boolean => {
  if (!(error instanceof SqlError)) return false
  const lost = lostConnection(error)
  if (lost) lastConnectionLossAt = Date.now()
  return lost
}

/** when a lost connection was last seen in this process (ms since the epoch; 0: never) */
let lastConnectionLossAt = 0

/** Whether a lost database connection was seen in the last `withinMs` (a failover under way, [D126]). */
export const databaseLostWithin = (withinMs: number): boolean => Date.now() - lastConnectionLossAt < withinMs

/** Records a lost connection seen elsewhere (tests, the status probe). */
export const noteConnectionLoss = () => {
  lastConnectionLossAt = Date.now()
}

const lostConnection = (error: SqlError): boolean => {
  const code = causeCode(error)
  if (code === undefined) return true
  // 25006: a read-only transaction, met on a node Patroni restarts read-only for a moment before
  // it promotes it after a crash ([D126]): the primary is not there yet, as with a lost connection
  if (/^[0-9A-Z]{5}$/.test(code)) return /^(08|57P0|53300|25006)/.test(code)
  return bunConnectionCodes.has(code) || errnoConnectionCodes.has(code)
}

/**
 * A serialization failure (40001) or a deadlock (40P01): PostgreSQL rolled the transaction back
 * and running the whole of it again is safe.
 */
export const isTransientConflict = (error: unknown): boolean =>
  error instanceof SqlError && ["40001", "40P01"].includes(causeCode(error) ?? "")

/** how often a transaction aborted by a conflict is run again before its caller sees a 500 */
const CONFLICT_RETRIES = 6

/**
 * Runs a whole transaction again when PostgreSQL aborted it for a deadlock or a serialization
 * failure (issue 34), a few times with a short jittered pause; the conflict may surface as a
 * failure or as a defect (an `orDie` inside). Wrap the transaction, never a part of one.
 */
export const retryConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  transaction.pipe(
    Effect.sandbox,
    Effect.retry({
      schedule: Schedule.jittered(Schedule.exponential("5 millis")),
      times: CONFLICT_RETRIES,
      while: (cause) => isTransientConflict(Cause.squash(cause))
    }),
    Effect.unsandbox
  )
