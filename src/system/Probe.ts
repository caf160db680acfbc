import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"

/**
 * A database probe for `GET /v1/status` ([D10]) that costs a request one async step (issue 8).
 *
 * `Effect.timeout` forked a racing fiber and a sleeper per request and, with the join of their
 * fiber refs, cost 40% of the route (docs/benchmarks.md, "Figures behind the code").
 * Here the check runs outside the request's fiber, bounded by a plain timer that interrupts it,
 * and requests that arrive while one check is in flight share its answer: every answer comes
 * from a check that started no earlier than the previous answer was given, so a status never
 * reports a database that a check has not just reached.
 */
export const makeProbe = <E, R>(runtime: Runtime.Runtime<R>, check: Effect.Effect<unknown, E, R>, timeoutMs: number): (() => Promise<boolean>) => {
  const run = Runtime.runCallback(runtime)
  let inFlight: Promise<boolean> | undefined
  const start = () =>
    new Promise<boolean>((resolve) => {
      let settled = false
      const settle = (up: boolean) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(up)
      }
      const timer = setTimeout(() => {
        settle(false)
        cancel()
      }, timeoutMs)
      const cancel = run(check, { onExit: (exit) => settle(Exit.isSuccess(exit)) })
    })
  return () => {
    if (inFlight !== undefined) return inFlight
    // a check may end synchronously (a client that refuses at once): the next request must not
    // get this answer again, so the slot is freed once it is settled, whenever that is
    const current = start()
    inFlight = current
    void current.then(() => {
      if (inFlight === current) inFlight = undefined
    })
    return current
  }
}

/** The bodies of `GET /v1/status` ([D10]): 200 while the database answers, 503 with `Retry-After: 5` when not. */
export const STATUS_UP = { success: true, message: "OK", data: { database: "ok" as const } }
export const STATUS_DOWN = { success: false, message: "Service temporarily unavailable.", data: { database: "unavailable" as const } }

/** The one probe of a server (`select 1`, 3 s), shared by every status request. */
export class StatusProbe extends Effect.Service<StatusProbe>()("system/StatusProbe", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return { databaseUp: makeProbe(yield* Effect.runtime<never>(), sql`select 1`, 3_000) } as const
  })
}) {}
