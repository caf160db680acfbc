import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import { Api } from "../Api.ts"
import { AppConfig } from "../platform/Config.ts"
import { RateLimiter } from "../platform/RateLimiter.ts"
import { Tokens } from "../accounts/Tokens.ts"
import { requestPrincipal } from "./Auth.ts"
import { bodyLimit } from "./BodyLimit.ts"
import { clientAddressWith } from "./ClientAddress.ts"
import { label, NOT_FOUND_MARK, requiredMessage } from "./Fields.ts"
import { ValidationError } from "./Errors.ts"

const envelope = (status: number, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson({ success: false, message }, { status, ...(headers ? { headers } : {}) })

export const notFound = () => envelope(404, "Resource not found.")
export const internalError = () => envelope(500, "An unexpected error occurred.")
export const unavailable = () => envelope(503, "Service temporarily unavailable.", { "retry-after": "5" })

// ---- 405: known path, method not served ------------------------------------------------

interface RouteShape {
  readonly pattern: RegExp
  readonly method: string
}

let routeShapes: ReadonlyArray<RouteShape> | undefined

const buildRouteShapes = (): ReadonlyArray<RouteShape> => {
  const shapes: Array<RouteShape> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path
        .split("/")
        .map((segment) => segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
        .join("/")
      shapes.push({ pattern: new RegExp(`^${source}/?$`), method: endpoint.method })
    }
  })
  return shapes
}

/** Methods served on a path (for `Allow`), empty when the path is unknown. */
export const allowedMethods = (path: string): ReadonlyArray<string> => {
  routeShapes ??= buildRouteShapes()
  const methods = new Set(routeShapes.filter((r) => r.pattern.test(path)).map((r) => r.method))
  if (methods.has("GET")) methods.add("HEAD")
  return [...methods]
}

// ---- decode errors -> 422 [D12] ---------------------------------------------------------

const typeMessage = (field: string, message: string): string => {
  const expected = /^Expected (\w+)/.exec(message)?.[1]
  switch (expected) {
    case "string":
      return `The ${label(field)} field must be a string.`
    case "number":
      return `The ${label(field)} field must be a number.`
    case "boolean":
      return `The ${label(field)} field must be true or false.`
    case "an":
    case "ReadonlyArray":
      return `The ${label(field)} field must be an array.`
    default:
      return `The ${label(field)} field is invalid.`
  }
}

/** The `errors` map of [D12] from a decode error; `undefined` when a path id failed (404). */
export const toValidationError = (error: HttpApiError.HttpApiDecodeError): ValidationError | undefined => {
  if (error.issues.some((issue) => issue.message === NOT_FOUND_MARK)) return undefined
  const errors: Record<string, Array<string>> = {}
  // an optional or nullable field is a union: its `undefined`/`null` member adds a second,
  // generic issue on the same path; the member that names the rule is the one to report
  const pathKey = (issue: (typeof error.issues)[number]) => issue.path.map(String).join(".")
  const isAlternative = (issue: (typeof error.issues)[number]) =>
    issue._tag === "Type" && /^Expected (undefined|null),/.test(issue.message)
  const named = new Set(error.issues.filter((issue) => !isAlternative(issue)).map(pathKey))
  for (const issue of error.issues) {
    if (isAlternative(issue) && named.has(pathKey(issue))) continue
    const field = issue.path.length === 0 ? "body" : String(issue.path[0])
    const nested = issue.path.length > 1 ? issue.path.map(String).join(".") : field
    let text: string
    if (issue.path.length === 0) {
      // a schema may name its own top-level shape (the node usage report is an array)
      text = issue.message.startsWith("The body ") ? issue.message : "The body must be a JSON object."
    } else if (issue._tag === "Missing") {
      text = requiredMessage(field)
    } else if (issue.message.startsWith("The ") || issue.message.startsWith("Invalid ")) {
      text = issue.message
    } else {
      text = typeMessage(field, issue.message)
    }
    const list = (errors[nested] ??= [])
    if (!list.includes(text)) list.push(text)
  }
  return new ValidationError({ errors })
}

/**
 * Input the database refuses to store (a NUL character, a number out of range, ...): a 422
 * safety net behind the field schemas, never a 500.
 */
export const isUnstorableInput = (error: unknown): boolean => {
  if (!(error instanceof SqlError)) return false
  const cause = error.cause
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String((cause as { code: unknown }).code) : ""
  return ["22021", "22P05", "22001", "22003", "22P02", "22007", "22008", "54000"].includes(code)
}

const unstorable = () => ValidationError.field("body", "The given data contains a value that cannot be stored.")

const bunConnectionCodes = new Set([
  "ERR_POSTGRES_CONNECTION_CLOSED",
  "ERR_POSTGRES_CONNECTION_FAILED",
  "ERR_POSTGRES_CONNECTION_REFUSED",
  "ERR_POSTGRES_CONNECTION_TIMEOUT",
  "ERR_POSTGRES_IDLE_TIMEOUT",
  "ERR_POSTGRES_LIFETIME_TIMEOUT"
])

/** A lost connection, not a bad query: the database is unreachable (503). */
export const isConnectionLoss = (error: unknown): boolean => {
  if (!(error instanceof SqlError)) return false
  const text = `${error.message} ${String(error.cause)}`
  const code = typeof error.cause === "object" && error.cause !== null && "code" in error.cause
    ? String((error.cause as { code: unknown }).code)
    : ""
  // a server-side SQLSTATE says exactly what happened: only connection classes are "lost"
  if (/^[0-9A-Z]{5}$/.test(code)) return /^(08|57P0|53300)/.test(code)
  // Bun.SQL's own codes (issue 8): the connections that failed, closed or timed out
  if (bunConnectionCodes.has(code)) return true
  return ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN"].includes(code) ||
    /connect|Connection terminated|timeout|ECONNREFUSED|ECONNRESET|socket|closed/i.test(text)
}

/**
 * The framework's own failures in our envelope ([D11]): decode errors (422, or 404 for an
 * impossible path id), a body that is not JSON (422 `errors.body`), no route (404/405),
 * a lost database (503) and any defect (500, logged, nothing internal in the body).
 * Declared errors pass through to their schema encoders.
 */
export const ErrorMappingLive = HttpApiBuilder.middleware(Api, (app) =>
  Effect.catchAllCause(app, (cause) =>
    Effect.gen(function*() {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const e: unknown = failure.value
        if (e instanceof HttpApiError.HttpApiDecodeError) {
          const validation = toValidationError(e)
          return validation ? yield* Effect.fail(validation) : notFound()
        }
        if (HttpServerError.isServerError(e) && e._tag === "RouteNotFound") {
          const request = e.request
          const path = new URL(request.url, "http://localhost").pathname
          const allow = allowedMethods(path)
          return allow.length > 0
            ? envelope(405, "Method not allowed.", { allow: allow.join(", ") })
            : notFound()
        }
        if (isConnectionLoss(e)) return unavailable()
        if (isUnstorableInput(e)) return yield* Effect.fail(unstorable())
        if (e instanceof SqlError) {
          yield* Effect.logError("database error", cause)
          return internalError()
        }
        return yield* Effect.failCause(cause)
      }
      if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
      const defect = Cause.dieOption(cause)
      if (Option.isSome(defect)) {
        const d = defect.value
        if (HttpServerError.isServerError(d) && d._tag === "RequestError" && d.reason === "Decode") {
          return yield* Effect.fail(ValidationError.field("body", "The body must be valid JSON."))
        }
        if (isConnectionLoss(d)) return unavailable()
        if (isUnstorableInput(d)) return yield* Effect.fail(unstorable())
      }
      yield* Effect.logError("unhandled defect", cause)
      return internalError()
    })))

// ---- around the whole app ----------------------------------------------------------------

/**
 * The spec's other routes: `GENERAL_RATE_LIMIT` a minute per user (a live bearer token: all of a
 * user's tokens count together) or else per address, in memory ([D30]). A token that is not live
 * counts against the address, so rotating made-up tokens buys nothing.
 */
const OWN_LIMITS = /^\/v1\/(auth\/(login|forgot-password|resend-verification)|tickets(\/[^/]+\/reply)?|promos\/validate)\/?$/

const generalLimit = (limiter: RateLimiter["Type"], config: AppConfig["Type"], tokens: Tokens["Type"]) => (app: HttpApp.Default) =>
  config.generalRateLimit === 0 ? app : Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    // the six routes of the spec's table count against their own, shared limits
    if (request.method === "POST" && OWN_LIMITS.test(request.url.split("?")[0]!)) return yield* app
    // verified once: `Authentication` reuses the answer
    const principal = request.headers["authorization"] === undefined ? Option.none() : yield* requestPrincipal(tokens)
    const key = Option.isSome(principal)
      ? `general:user:${principal.value.userId}`
      : `general:ip:${yield* clientAddressWith(config)}`
    const hit = yield* Effect.orDie(limiter.hit(key, config.generalRateLimit))
    if (!hit.allowed) return envelope(429, "Too Many Attempts.", { "retry-after": String(hit.retryAfter) })
    return yield* app
  })

/** The request id header, and `Retry-After` on every 503 ([D11]) whichever layer produced it. */
const tagResponse = (id: string) => (_request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) =>
  Effect.succeed(
    response.status === 503 && response.headers["retry-after"] === undefined
      ? HttpServerResponse.setHeaders(response, { "x-request-id": id, "retry-after": "5" })
      : HttpServerResponse.setHeader(response, "x-request-id", id)
  )

/**
 * Method, path, status, duration and request id; never a header, query or body. The log line
 * is only built when `LOG_LEVEL` lets info through (issue 8: it cost a fifth of a request).
 */
const requestLog = (config: AppConfig["Type"]) => (app: HttpApp.Default): HttpApp.Default => {
  const logs = LogLevel.lessThanEqual(config.logLevel, LogLevel.Info)
  return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const id = request.headers["x-request-id"]?.slice(0, 64) || crypto.randomUUID()
    // the server has sent the response by the time `app` returns: headers go in a pre-response handler
    const tagged = Effect.zipRight(HttpApp.appendPreResponseHandler(tagResponse(id)), app)
    if (!logs) return tagged
    const start = performance.now()
    return Effect.tap(tagged, (response) =>
      Effect.logInfo("request").pipe(Effect.annotateLogs({
        method: request.method,
        path: request.url.split("?")[0],
        status: response.status,
        ms: Math.round((performance.now() - start) * 10) / 10,
        request_id: id
      })))
  })
}

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
  return typeof server === "object" && server !== null && "stop" in server && typeof server.stop === "function"
    ? server as Listener
    : undefined
}

/** Counts the request in flight until it ends, however it ends (cheaper than acquireUseRelease). */
const track = (inFlight: InFlight) => (app: HttpApp.Default): HttpApp.Default => {
  const leave = Effect.sync(() => inFlight.leave())
  const counted = Effect.suspend(() => {
    if (inFlight.closing) return Effect.succeed(closingResponse())
    inFlight.enter()
    return Effect.ensuring(app, leave)
  })
  return Effect.suspend(() =>
    inFlight.listener !== undefined ? counted : Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      inFlight.listener = listenerOf(request)
      return counted
    })
  )
}

/**
 * The 413 and the general limit run inside the API (an API-level middleware), so their
 * responses pass through the same pre-response handlers (request id, CORS) as any other.
 */
export const GuardsLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* AppConfig
  const tokens = yield* Tokens
  const generalLimiter = yield* RateLimiter.memory
  return HttpApiBuilder.middleware((app) => bodyLimit(generalLimit(generalLimiter, config, tokens)(app)))
}))

/** Everything the server wraps around the API, outermost first. */
export const makeServeMiddleware = (options: {
  readonly inFlight: InFlight
  readonly config: AppConfig["Type"]
}) => {
  const { config } = options
  const cors = config.corsOrigins.length === 0
    ? (app: HttpApp.Default) => app
    : HttpMiddleware.cors({
      allowedOrigins: config.corsOrigins.includes("*") ? [] : (origin: string) => config.corsOrigins.includes(origin),
      allowedHeaders: ["authorization", "content-type", "x-request-id", "x-signature"],
      exposedHeaders: ["x-ratelimit-limit", "x-ratelimit-remaining", "retry-after", "content-disposition", "x-request-id"],
      maxAge: 600
    })
  return (app: HttpApp.Default) =>
    track(options.inFlight)(
      requestLog(config)(
        cors(app)
      )
    )
}
