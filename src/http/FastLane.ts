import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as LogLevel from "effect/LogLevel"
import type { AppConfig } from "../platform/Config.ts"
import type { Metrics, RouteFigures } from "../platform/Metrics.ts"
import type { RateLimiter } from "../platform/RateLimiter.ts"
import { clientIpOf, DELEGATED_ADDRESS_HEADER, limitAddress } from "./ClientAddress.ts"
import type { InFlight } from "./Drain.ts"
import { requestIdOf, requestLine } from "./RequestLog.ts"

/**
 * THE FAST LANE (issue 27): `GET` and `HEAD` of `/v1/status` and `/v1/plans`, the two reads
 * without a caller, answered by Bun routes beside the pipeline (`Server.ts`), with the same
 * bytes, statuses and headers, and everything the pipeline does around them:
 *
 *  - the in-flight count, and the closing 503 once shutdown has started ([D5], `Drain.ts`);
 *  - the route's figures ([D102], `RequestMetrics.ts`) and the request log line and id
 *    (`RequestLog.ts`, its own code; `Retry-After: 5` on every 503, [D11]);
 *  - the general limit ([D30], `GeneralLimit.ts`) on the same in-memory windows, per address as
 *    `TRUST_PROXY` reads it (`ClientAddress.ts`);
 *  - the status probe shared with the handler, the catalogue's encoded list from memory.
 *
 * What needs the pipeline is handed to it whole (`server.fetch`): a bearer token while the
 * general limit is on (it counts per user once the token is verified), and the plans while the
 * catalogue cache does not answer from memory (not loaded, LISTEN connection down: the pipeline
 * reads the database and maps its failures). Other methods never reach a route: Bun sends them to
 * the pipeline (its 405). Not registered when `CORS_ORIGINS` is set or `FAST_LANE=false`.
 */

/** The Bun server as a route handler sees it. */
export interface LaneServer {
  requestIP(request: Request): { readonly address: string } | null
  fetch(request: Request): Response | Promise<Response>
  stop(closeActiveConnections?: boolean): unknown
}

type Handler = (request: Request, server: LaneServer) => Response | Promise<Response>

/** The Bun routes of the lane: none when it is off. */
export type LaneRoutes = Record<string, { readonly GET: Handler }>

export interface LaneOptions {
  readonly config: AppConfig["Type"]
  readonly inFlight: InFlight
  /** the figures of a request's route template, as the pipeline finds them */
  readonly figuresOf: (url: string) => RouteFigures
  readonly metrics: Metrics["Type"]
  /** the general limit's in-memory limiter, the pipeline's own */
  readonly generalLimiter: RateLimiter["Type"]
  /** the shared status probe: whether the database answered */
  readonly databaseUp: () => Promise<boolean>
  /** the bodies of `/v1/status` */
  readonly status: { readonly up: unknown; readonly down: unknown }
  /** the encoded `GET /v1/plans` body while the catalogue cache answers from memory */
  readonly cachedPlanList: () => Uint8Array | undefined
}

/** Whether the lane serves under this configuration. */
export const laneEnabled = (config: AppConfig["Type"]) => config.fastLane === true && config.corsOrigins.length === 0

const JSON_TYPE = "application/json"

/** The closing 503 of `Drain.ts` ([D5]): neither counted nor logged there either. */
const closingResponse = () =>
  new Response(JSON.stringify({ success: false, message: "Service temporarily unavailable." }), {
    status: 503,
    headers: { "content-type": JSON_TYPE, "retry-after": "5", connection: "close" }
  })

/** The path and query of a request's URL (Bun gives the absolute URL). */
const pathAndQuery = (url: string) => {
  const start = url.indexOf("/", url.indexOf("//") + 2)
  return start === -1 ? "/" : url.slice(start)
}

/**
 * The lane's request log lines, written together once the requests of this turn of the event
 * loop are answered: one write for many lines. A write a line (`console.log` writes at once) cost
 * the lane two thirds of its throughput with the log on (issue 27, docs/benchmarks.md). Each line
 * keeps its own timestamp; a line may follow a pipeline's line of a later request. What is
 * pending is written when the process exits.
 */
/** every lane's flush, run once at exit (one listener for the process, however many lanes are built) */
const flushesAtExit = new Set<() => void>()
process.once("exit", () => {
  for (const flush of flushesAtExit) flush()
})

const batchedLog = () => {
  let pending: Array<string> = []
  const flush = () => {
    const lines = pending
    pending = []
    if (lines.length > 0) console.log(lines.join("\n"))
  }
  flushesAtExit.add(flush)
  return (line: string) => {
    if (pending.push(line) === 1) setImmediate(flush)
  }
}

export const makeFastLane = (options: LaneOptions): LaneRoutes => {
  const { config, inFlight, metrics, generalLimiter } = options
  if (!laneEnabled(config)) return {}
  const logs = LogLevel.lessThanEqual(config.logLevel, LogLevel.Info)
  const log = batchedLog()
  const limit = config.generalRateLimit
  const statusFigures = options.figuresOf("/v1/status")
  const plansFigures = options.figuresOf("/v1/plans")
  const upBody = JSON.stringify(options.status.up)
  const downBody = JSON.stringify(options.status.down)
  const tooManyBody = JSON.stringify({ success: false, message: "Too Many Attempts." })

  /** The request as the pipeline gets it, the socket's address handed on in a header of the lane's own. */
  const delegate = (request: Request, server: LaneServer) => {
    const headers = new Headers(request.headers)
    headers.set(DELEGATED_ADDRESS_HEADER, server.requestIP(request)?.address ?? "unknown")
    return server.fetch(new Request(request.url, { method: request.method, headers, signal: request.signal }))
  }

  /** The general limit's refusal, or undefined when the request may go on ([D30]). */
  const refusal = (request: Request, server: LaneServer): Response | undefined => {
    if (limit === 0) return undefined
    const socket = server.requestIP(request)?.address ?? "unknown"
    const address = limitAddress(clientIpOf(socket, request.headers.get("x-forwarded-for"), config.trustProxy))
    const hit = Effect.runSync(Effect.orDie(generalLimiter.hit(`general:ip:${address}`, limit)))
    if (hit.allowed) return undefined
    metrics.rateLimitRefused("general")
    return new Response(tooManyBody, {
      status: 429,
      headers: { "content-type": JSON_TYPE, "retry-after": String(hit.retryAfter) }
    })
  }

  /** The request's figures and log line once its response is known; the response gets its id. */
  const finish = (
    request: Request,
    figures: RouteFigures,
    start: number,
    id: string,
    response: Response
  ): Response => {
    if (response.status === 503 && !response.headers.has("retry-after")) response.headers.set("retry-after", "5")
    response.headers.set("x-request-id", id)
    figures.record(request.method, response.status, (performance.now() - start) / 1000)
    if (logs) log(requestLine(FiberId.unsafeMake().id, request.method, pathAndQuery(request.url), response.status, start, id))
    return response
  }

  /**
   * Around both routes, in the pipeline's order: the closing 503, then (counted in flight) the
   * figures, the id and the log line, the general limit, the answer.
   */
  const lane = (
    figures: RouteFigures,
    needsPipeline: (request: Request) => boolean,
    answer: (request: Request) => Response | Promise<Response>
  ): Handler =>
  (request, server) => {
    inFlight.listener ??= server
    if (inFlight.closing) return closingResponse()
    // a bearer token counts per user under the general limit: the pipeline verifies it
    if ((limit !== 0 && request.headers.has("authorization")) || needsPipeline(request)) return delegate(request, server)
    const start = performance.now()
    const id = requestIdOf(request.headers.get("x-request-id"))
    const refused = refusal(request, server)
    if (refused !== undefined) return finish(request, figures, start, id, refused)
    const answered = answer(request)
    if (answered instanceof Response) return finish(request, figures, start, id, answered)
    inFlight.enter()
    return answered.then(
      (response) => {
        inFlight.leave()
        // a client gone before the answer: recorded as the pipeline's interrupted request (499), no log line
        if (request.signal.aborted) {
          figures.record(request.method, 499, (performance.now() - start) / 1000)
          return response
        }
        return finish(request, figures, start, id, response)
      },
      (error: unknown) => {
        inFlight.leave()
        throw error
      }
    )
  }

  const status = lane(statusFigures, () => false, () =>
    options.databaseUp().then((up) =>
      up
        ? new Response(upBody, { status: 200, headers: { "content-type": JSON_TYPE } })
        : new Response(downBody, { status: 503, headers: { "content-type": JSON_TYPE, "retry-after": "5" } })
    ))

  const plans = lane(plansFigures, () => options.cachedPlanList() === undefined, () => {
    const body = options.cachedPlanList()
    return new Response(body as Uint8Array<ArrayBuffer>, { status: 200, headers: { "content-type": JSON_TYPE } })
  })

  return { "/v1/status": { GET: status }, "/v1/plans": { GET: plans } }
}
