import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as LogLevel from "effect/LogLevel"
import type { AppConfig } from "../platform/Config.ts"

/** The request id header, and `Retry-After` on every 503 ([D11]) whichever layer produced it. */
const tagResponse = (id: string) => (_request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) =>
  Effect.succeed(
    response.status === 503 && response.headers["retry-after"] === undefined
      ? HttpServerResponse.setHeaders(response, { "x-request-id": id, "retry-after": "5" })
      : HttpServerResponse.setHeader(response, "x-request-id", id)
  )

/** a logfmt value as Effect's `Logger.logFmt` writes it: bare when it has no space, quote or `=` */
const value = (v: string) => (/^[^\s"=]*$/.test(v) ? v : JSON.stringify(v))

/** The request id ([D11]): the client's `x-request-id` cut to 64 characters, else a new UUID. */
export const requestIdOf = (header: string | null | undefined): string => header?.slice(0, 64) || crypto.randomUUID()

/** paths whose own segment is a credential: a subscription link ([D122]) is logged without its token */
const SECRET_SEGMENT = /^\/s\/[^/]*/

/** the path as a log line may show it: never a secret it carries */
export const secretFree = (path: string): string => path.replace(SECRET_SEGMENT, "/s/[token]")

/**
 * The request's log line, as `Logger.logFmt` writes it: `url` is the path with its query (only
 * the path is written), `start` the `performance.now()` when the request came in.
 */
export const requestLine = (fiber: number, method: string, url: string, status: number, start: number, id: string) => {
  const ms = Math.round((performance.now() - start) * 10) / 10
  const query = url.indexOf("?")
  const path = secretFree(query === -1 ? url : url.slice(0, query))
  return (
    `timestamp=${new Date().toISOString()} level=INFO fiber=#${fiber} message=request method=${value(method)} ` +
    `path=${value(path)} status=${status} ms=${ms} request_id=${value(id)}`
  )
}

/** the request lines waiting for the end of this turn of the event loop */
let pending: Array<string> = []
const flush = () => {
  const lines = pending
  pending = []
  if (lines.length > 0) console.log(lines.join("\n"))
}
// what is pending is written when the process exits
process.once("exit", flush)

/**
 * The request log lines, written together once the requests of this turn of the event loop are
 * answered: one write for many lines (a write a line cost two thirds of the throughput of a
 * cheap route with the log on; issue 27, docs/benchmarks.md). Each line keeps its timestamp.
 */
export const logRequestLine = (line: string) => {
  if (pending.push(line) === 1) setImmediate(flush)
}

/**
 * Method, path, status, duration and request id; never a header, query or body. The log line
 * is only built when `LOG_LEVEL` lets info through (issue 8: it cost a fifth of a request), and
 * it is written as the logfmt line `Logger.logFmt` writes (timestamp, level, fiber, message, the
 * fields) but straight to the console: through the fiber logger it cost about 25 times more
 * per request (issue 27, `bun run bench/pipeline.ts`).
 */
export const requestLog =
  (config: AppConfig["Type"]) =>
  (app: HttpApp.Default): HttpApp.Default => {
    const logs = LogLevel.lessThanEqual(config.logLevel, LogLevel.Info)
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const id = requestIdOf(request.headers["x-request-id"])
      // the server has sent the response by the time `app` returns: headers go in a pre-response handler
      const tagged = Effect.zipRight(HttpApp.appendPreResponseHandler(tagResponse(id)), app)
      if (!logs) return tagged
      const start = performance.now()
      return Effect.withFiberRuntime((fiber) =>
        Effect.tap(tagged, (response) => {
          logRequestLine(requestLine(fiber.id().id, request.method, request.url, response.status, start, id))
        })
      )
    })
  }
