import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

/**
 * The one place that reads PostgreSQL's SQLSTATEs (issue 35): the rest of `src` asks these
 * predicates (`test/rules/sql-states.test.ts` fails on a SQLSTATE literal anywhere else).
 */

/** SQLSTATEs by name (PostgreSQL's appendix A) */
const SQLSTATE = {
  uniqueViolation: "23505",
  serializationFailure: "40001",
  deadlockDetected: "40P01",
  readOnlySqlTransaction: "25006",
  cannotConnectNow: "57P03",
  tooManyConnections: "53300"
} as const

/** the data exceptions (and a value too large to store) that mean "bad input", not "bad query" */
const UNSTORABLE = new Set(["22021", "22P05", "22001", "22003", "22P02", "22007", "22008", "54000"])

/** a SQLSTATE: a class of a digit and a character, or F0, HV, P0, XX; three characters more (not "EPIPE") */
const SQLSTATE_SHAPE = /^([0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/

/** a driver error's `code` (the SQLSTATE of a server error, a driver's or socket's own code otherwise) */
const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause ? String((cause as { code: unknown }).code) : undefined

/** The SQLSTATE of a driver error (a `SqlError`'s cause), if a server answered with one. */
export const sqlStateOf = (cause: unknown): string | undefined => {
  const code = codeOf(cause)
  return code !== undefined && SQLSTATE_SHAPE.test(code) ? code : undefined
}

/** The SQLSTATE of a `SqlError`, if a server answered with one. */
export const sqlState = (error: unknown): string | undefined => (error instanceof SqlError ? sqlStateOf(error.cause) : undefined)

/** A unique index refused the row (23505), whichever driver carried it. */
export const isUniqueViolation = (error: unknown): boolean => sqlState(error) === SQLSTATE.uniqueViolation

/** A write refused by a read-only node (25006: a Patroni node restarted read-only before it is promoted, [D126]). */
export const isReadOnlyTransaction = (error: unknown): boolean => sqlState(error) === SQLSTATE.readOnlySqlTransaction

/** A serialization failure (40001). */
export const isSerializationFailure = (error: unknown): boolean => sqlState(error) === SQLSTATE.serializationFailure

/** A deadlock (40P01). */
export const isDeadlock = (error: unknown): boolean => sqlState(error) === SQLSTATE.deadlockDetected

/**
 * Input the database refuses to store (a NUL character, a number out of range, ...): a 422
 * safety net behind the field schemas, never a 500.
 */
export const isUnstorableInput = (error: unknown): boolean => UNSTORABLE.has(sqlState(error) ?? "")

const bunConnectionCodes = new Set([
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT"
])

const errnoConnectionCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "ENOENT"])

const causeCode = (error: SqlError): string | undefined => codeOf(error.cause)

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
  if (SQLSTATE_SHAPE.test(code)) {
    // class 08 (connection exception), 57P0x (the server shutting down or starting up)
    return code.startsWith("08") || code.startsWith("57P0") || code === SQLSTATE.tooManyConnections || code === SQLSTATE.readOnlySqlTransaction
  }
  return bunConnectionCodes.has(code) || errnoConnectionCodes.has(code)
}

/**
 * A connection that was never established (Bun.SQL's codes, the socket's, and the SQLSTATEs a
 * server answers only to a new connection: starting up or shutting down, 57P03; full, 53300), and
 * a write refused by a read-only node (25006): the statement changed nothing ([D126], `Reconnect.ts`).
 */
const neverSent = new Set<string>([
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ECONNREFUSED",
  SQLSTATE.cannotConnectNow,
  SQLSTATE.tooManyConnections,
  SQLSTATE.readOnlySqlTransaction
])

/** A lost connection whose statement cannot have had an effect (see `neverSent`). */
export const isLossWithoutEffect = (error: unknown): boolean => isConnectionLoss(error) && neverSent.has(causeCode(error as SqlError) ?? "")

/**
 * A serialization failure (40001) or a deadlock (40P01): PostgreSQL rolled the transaction back
 * and running the whole of it again is safe.
 */
export const isTransientConflict = (error: unknown): boolean => isSerializationFailure(error) || isDeadlock(error)

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
