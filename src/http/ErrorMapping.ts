import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ValidationError } from "../platform/Errors.ts"
import { label, NOT_FOUND_MARK, requiredMessage } from "../platform/Fields.ts"
import { envelope, internalError, notFound, unavailable } from "./Responses.ts"

// ---- 405: known path, method not served ------------------------------------------------

interface RouteShape {
  readonly pattern: RegExp
  readonly method: string
}

const routeShapes = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>
): ReadonlyArray<RouteShape> => {
  const shapes: Array<RouteShape> = []
  HttpApi.reflect(api, {
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
const allowedMethods = (shapes: ReadonlyArray<RouteShape>, path: string): ReadonlyArray<string> => {
  const methods = new Set(shapes.filter((r) => r.pattern.test(path)).map((r) => r.method))
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
export const errorMapping = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E | ValidationError, R>
) => {
  let shapes: ReadonlyArray<RouteShape> | undefined
  return HttpApiBuilder.middleware(api, (app) =>
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
          const allow = allowedMethods(shapes ??= routeShapes(api), path)
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
          // `JsonBody` says why it refused a body; any other unreadable body is not JSON
          return yield* Effect.fail(d.cause instanceof ValidationError ? d.cause : ValidationError.field("body", "The body must be valid JSON."))
        }
        if (isConnectionLoss(d)) return unavailable()
        if (isUnstorableInput(d)) return yield* Effect.fail(unstorable())
      }
      yield* Effect.logError("unhandled defect", cause)
      return internalError()
    })))
}
