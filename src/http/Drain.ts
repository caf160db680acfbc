import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"

/** Requests in flight, so shutdown can wait for them ([D5]). */
export class InFlight {
  count = 0
  /** set when shutdown starts: requests that arrive later are refused, not waited for */
  closing = false
  /** the listening server, seen on the first request: shutdown stops it accepting first */
  listener: Listener | undefined
  private waiters: Array<() => void> = []
  enter() {
    this.count++
  }
  leave() {
    this.count--
    if (this.count === 0) for (const w of this.waiters.splice(0)) w()
  }
  /**
   * Starts the shutdown and resolves when the requests in flight have finished, or after
   * `graceMs` ([D5]: 10 s). Bounded by its own timer: it runs in a finalizer, where an
   * `Effect.timeout` cannot interrupt the wait (issue 9: under steady load the count never
   * reached 0 and the process never exited).
   */
  drained(graceMs = 10_000): Promise<void> {
    this.closing = true
    // stop accepting at once: a connection accepted while the platform's own shutdown runs (after
    // this drain) was dropped unanswered (issue 9); requests in flight go on to their response
    try {
      this.listener?.stop(false)
    } catch {
      // already stopped
    }
    if (this.count === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, graceMs)
      this.waiters.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }
}

/** A request that arrives once shutdown has started: 503, and the connection is closed ([D5]). */
const closingResponse = () =>
  HttpServerResponse.unsafeJson(
    { success: false, message: "Service temporarily unavailable." },
    { status: 503, headers: { "retry-after": "5", connection: "close" } }
  )

interface Listener {
  stop(closeActiveConnections?: boolean): unknown
}

/** The Bun server a request came through (`@effect/platform-bun` keeps it on the request). */
const listenerOf = (request: HttpServerRequest.HttpServerRequest): Listener | undefined => {
  const server: unknown = (request as unknown as { readonly bunServer?: unknown }).bunServer
  return typeof server === "object" && server !== null && "stop" in server && typeof server.stop === "function" ? (server as Listener) : undefined
}

/** Counts the request in flight until it ends, however it ends (cheaper than acquireUseRelease). */
export const track =
  (inFlight: InFlight) =>
  (app: HttpApp.Default): HttpApp.Default => {
    const leave = Effect.sync(() => inFlight.leave())
    const counted = Effect.suspend(() => {
      if (inFlight.closing) return Effect.succeed(closingResponse())
      inFlight.enter()
      return Effect.ensuring(app, leave)
    })
    return Effect.suspend(() =>
      inFlight.listener !== undefined
        ? counted
        : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
            inFlight.listener = listenerOf(request)
            return counted
          })
    )
  }
