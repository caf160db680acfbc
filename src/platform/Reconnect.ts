import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { isConnectionLoss, isLossWithoutEffect } from "./SqlErrors.ts"

/**
 * [D126] (issue 41): work that never reached the database is tried again while a failover runs,
 * so most of its 503s become slow successes. Only what cannot have had an effect is tried again:
 *
 * - a statement whose connection could not be made (refused, closed before it was established,
 *   or turned away by a server starting up or shutting down, SQLSTATE 57P03, or full, 53300):
 *   the statement was never sent; or a statement refused by a node that is still read-only
 *   (25006: Patroni restarts a crashed primary read-only for a moment before promoting it):
 *   on its own, outside a transaction, it changed nothing;
 * - a transaction whose connection was lost before its body began (the connection could not be
 *   had, or `BEGIN` failed): nothing of it ran, in the database or outside it.
 *
 * A connection lost once the body began stays a failure (503): the body may have called outside
 * services (a payment gateway's refund) that must not run twice; and a loss during `COMMIT` is
 * never retried, its outcome being unknown.
 *
 * Attempts: 100 ms doubling to 1 s apart, none starting later than `RECONNECT_WINDOW_MS` after
 * the first one began, nor after the request's `reconnectUntil` (set by `http/Deadline.ts` so the
 * answer still comes within [D126]'s 10 s). `Bun.SQL` itself waits up to its connect timeout
 * (5 s) for a pool's connection to come back before it fails a statement: a gap shorter than that
 * is already a slow success, and a statement that failed that way is past the window.
 */
export const RECONNECT_WINDOW_MS = 5_000

/** the last moment (epoch ms) a new attempt may start; a request sets it below its deadline */
export const reconnectUntil: FiberRef.FiberRef<number> = FiberRef.unsafeMake(Number.POSITIVE_INFINITY)

const delayOf = (attempt: number) => Math.min(1_000, 100 * 2 ** attempt)

/** runs `make()` again while `retriable` says its failure had no effect, within the bounds above */
export const reconnecting = <A, E, R>(make: () => Effect.Effect<A, E, R>, retriable: (cause: Cause.Cause<E>) => boolean) => {
  const loop = (start: number, attempt: number): Effect.Effect<A, E, R> =>
    Effect.catchAllCause(Effect.suspend(make), (cause) => {
      if (!retriable(cause)) return Effect.failCause(cause)
      return Effect.flatMap(FiberRef.get(reconnectUntil), (until) => {
        const next = Date.now() + delayOf(attempt)
        if (next - start > RECONNECT_WINDOW_MS || next > until) return Effect.failCause(cause)
        return Effect.zipRight(Effect.sleep(delayOf(attempt)), loop(start, attempt + 1))
      })
    })
  return Effect.suspend(() => loop(Date.now(), 0))
}

/** the failure of a statement outside a transaction that cannot have changed anything */
export const hadNoEffect = (cause: Cause.Cause<unknown>): boolean => isLossWithoutEffect(Cause.squash(cause))

/** a lost connection, whatever the statement */
export const wasConnectionLoss = (cause: Cause.Cause<unknown>): boolean => isConnectionLoss(Cause.squash(cause))
