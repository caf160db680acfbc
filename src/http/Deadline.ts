import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { reconnectUntil } from "../platform/Reconnect.ts"
import { databaseLostWithin } from "../platform/SqlErrors.ts"
import { unavailable } from "./Responses.ts"

/**
 * [D126]: no request hangs while the database fails over. A request that starts while a lost
 * database connection was seen in the last 30 s and has no response after `REQUEST_DEADLINE_MS`
 * answers 503 `Service temporarily unavailable.` with `Retry-After`, within the 10 s [D126]
 * allows. With the database healthy a request runs as it is (a slow one, password hashes queued on
 * a busy machine, goes on to its answer).
 * The handler is not interrupted (the platform runs it uninterruptibly,
 * and a half-done sequence of writes is worse than a late one): it goes on to its end on its own
 * fiber, as it would for a client that went away, and its answer is dropped. The node protocol's
 * long-lived streams (`/v1/node/rpc`, [D105]) are not requests in this sense and are left alone.
 */
export const REQUEST_DEADLINE_MS = 9_000

/**
 * A statement or transaction that never reached the database is tried again while a failover
 * runs (`platform/Reconnect.ts`), but no new attempt starts in the last 5 s before the deadline
 * (the driver's connect timeout): one that succeeds still answers in time, and a request that
 * started while the database was healthy (not cut at the deadline) still ends within 10 s.
 */
const RECONNECT_MARGIN_MS = 5_000

const isStream = (request: HttpServerRequest.HttpServerRequest) => request.url.includes("/v1/node/rpc")

/** whether the database is being lost now: a lost connection seen in the last 30 s */
const failingOver = () => databaseLostWithin(LOSS_WINDOW_MS)

export const deadline =
  (ms: number = REQUEST_DEADLINE_MS, isFailingOver: () => boolean = failingOver) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      if (isStream(request)) return app
      // statements that never reached the database are retried until shortly before the deadline
      const bounded = Effect.suspend(() => Effect.locally(app, reconnectUntil, Date.now() + ms - RECONNECT_MARGIN_MS))
      // while the database is healthy the request runs as it is, on its own fiber (nothing to cut)
      if (!isFailingOver()) return bounded
      // while it is being lost: the handler on a fiber of its own, given up at the deadline
      return Effect.flatMap(Effect.forkDaemon(bounded), (fiber) => {
        // the handler's fiber refs (the pre-response handlers that add headers, such as a route's
        // X-RateLimit-*) come back whether it succeeded or failed: the join succeeds with the
        // handler's exit, because `timeoutTo` hands its racer's refs back only on a success
        const join = Effect.interruptible(Effect.flatMap(Fiber.await(fiber), (exit) => Effect.as(Fiber.inheritAll(fiber), exit)))
        return Effect.timeoutTo(join, { duration: Duration.millis(ms), onSuccess: (exit) => exit, onTimeout: unavailable }).pipe(Effect.flatten)
      })
    })

/** how recent a lost connection must be for a late request to be given up as a failover's */
const LOSS_WINDOW_MS = 30_000
