import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { databaseLostWithin } from "../platform/SqlErrors.ts"
import { unavailable } from "./Responses.ts"

/**
 * [D126]: no request hangs while the database fails over. A request that has no response after
 * `REQUEST_DEADLINE_MS`, while a lost database connection was seen in the last 30 s, answers 503
 * `Service temporarily unavailable.` with `Retry-After`, within the 10 s [D126] allows. With the
 * database healthy a slow request (password hashes queued on a busy machine) goes on to its answer. The handler is not interrupted (the platform runs it uninterruptibly,
 * and a half-done sequence of writes is worse than a late one): it goes on to its end on its own
 * fiber, as it would for a client that went away, and its answer is dropped. The node protocol's
 * long-lived streams (`/v1/node/rpc`, [D105]) are not requests in this sense and are left alone.
 */
export const REQUEST_DEADLINE_MS = 9_000

const isStream = (request: HttpServerRequest.HttpServerRequest) => request.url.includes("/v1/node/rpc")

export const deadline = (ms: number = REQUEST_DEADLINE_MS) => (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    isStream(request)
      ? app
      : Effect.flatMap(Effect.forkDaemon(app), (fiber) => {
        const join = Effect.interruptible(Fiber.join(fiber))
        return Effect.flatten(Effect.timeoutTo(join, {
          duration: Duration.millis(ms),
          onSuccess: Effect.succeed,
          onTimeout: () => (databaseLostWithin(LOSS_WINDOW_MS) ? Effect.succeed(unavailable()) : join)
        }))
      }))

/** how recent a lost connection must be for a late request to be given up as a failover's */
const LOSS_WINDOW_MS = 30_000
