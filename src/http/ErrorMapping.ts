import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { SqlError } from "@effect/sql/SqlError"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { ValidationError } from "../platform/Errors.ts"
import { isConnectionLoss, isUnstorableInput } from "../platform/SqlErrors.ts"
import { label } from "../platform/Fields.ts"
import { Metrics } from "../platform/Metrics.ts"
import { fieldErrors } from "./DecodeIssues.ts"
import { decodeJsonBody } from "./JsonBody.ts"
import { envelope, internalError, notFound, unavailable } from "./Responses.ts"

// ---- 405: known path, method not served ------------------------------------------------

/** A schema of the Api, by its AST (ours need no context to decode). */
type Decoder = AST.AST

interface RouteShape {
  readonly pattern: RegExp
  readonly method: string
  readonly params: ReadonlyArray<string>
  readonly path: Option.Option<Decoder>
  readonly urlParams: Option.Option<Decoder>
  readonly payload: Option.Option<Decoder>
}

const routeShapes = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>
): ReadonlyArray<RouteShape> => {
  const shapes: Array<RouteShape> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const params: Array<string> = []
      const source = endpoint.path
        .split("/")
        .map((segment) => {
          if (!segment.startsWith(":")) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          params.push(segment.slice(1))
          return "([^/]+)"
        })
        .join("/")
      shapes.push({
        pattern: new RegExp(`^${source}/?$`),
        method: endpoint.method,
        params,
        path: Option.map(endpoint.pathSchema, (schema) => schema.ast),
        urlParams: Option.map(endpoint.urlParamsSchema, (schema) => schema.ast),
        payload: Option.map(endpoint.payloadSchema, (schema) => schema.ast)
      })
    }
  })
  return shapes
}

/**
 * The router's longest path parameter (find-my-way-ts's default `maxParamLength`): a longer
 * segment matches no route, so it is no id of any route and answers 404 ([D117]), not 405.
 */
const MAX_PARAM_LENGTH = 100

const decoded = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** Methods served on a path (for `Allow`), empty when the path is unknown. */
const allowedMethods = (shapes: ReadonlyArray<RouteShape>, path: string): ReadonlyArray<string> => {
  const served = (r: RouteShape) => {
    const match = r.pattern.exec(path)
    return match !== null && match.slice(1).every((param) => decoded(param).length <= MAX_PARAM_LENGTH)
  }
  const methods = new Set(shapes.filter(served).map((r) => r.method))
  if (methods.has("GET")) methods.add("HEAD")
  return [...methods]
}

// ---- decode errors -> 422 [D12], or 404 for a path id ---------------------------------------

const pathname = (url: string) => new URL(url, "http://localhost").pathname

const queryRecord = (url: string): Record<string, string | Array<string>> => {
  const record: Record<string, string | Array<string>> = {}
  for (const [key, value] of new URL(url, "http://localhost").searchParams) {
    const seen = record[key]
    record[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return record
}

/**
 * The framework's decode error keeps only formatted text, so the request is decoded again
 * against its endpoint's schemas, in the framework's order, to see which schema failed and how:
 * a path that does not decode is an id that cannot exist (404, [D11]); a query or a body that
 * does not decode gives its fields' errors. Only requests that failed pay for this.
 */
export const diagnoseDecodeError = (shapes: ReadonlyArray<RouteShape>, error: HttpApiError.HttpApiDecodeError) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = pathname(request.url)
    const method = request.method === "HEAD" ? "GET" : request.method
    const route = shapes.find((shape) => shape.method === method && shape.pattern.test(path))
    if (route !== undefined) {
      const match = route.pattern.exec(path)!
      const params: Record<string, string> = {}
      try {
        route.params.forEach((name, i) => {
          params[name] = decodeURIComponent(match[i + 1]!)
        })
      } catch {
        return undefined
      }
      if (Option.isSome(route.path) && Either.isLeft(Schema.decodeUnknownEither(Schema.make(route.path.value))(params))) return undefined
      if (Option.isSome(route.urlParams)) {
        const query = Schema.decodeUnknownEither(Schema.make(route.urlParams.value), { errors: "all" })(queryRecord(request.url))
        if (Either.isLeft(query)) return new ValidationError({ errors: fieldErrors(query.left.issue) })
      }
      if (Option.isSome(route.payload) && request.method !== "GET" && request.method !== "HEAD") {
        const body = yield* Effect.either(Effect.flatten(decodeJsonBody(request)))
        if (Either.isRight(body)) {
          const payload = Schema.decodeUnknownEither(Schema.make(route.payload.value), { errors: "all" })(body.right)
          if (Either.isLeft(payload)) return new ValidationError({ errors: fieldErrors(payload.left.issue) })
        }
      }
    }
    // not one of the endpoint's inputs (headers, say): each field the framework named is invalid
    const errors: Record<string, Array<string>> = {}
    for (const issue of error.issues) {
      const field = issue.path.length === 0 ? "body" : String(issue.path[0])
      errors[field] = [field === "body" ? "The body must be a JSON object." : `The ${label(field)} field is invalid.`]
    }
    return new ValidationError({ errors })
  })

export { isConnectionLoss, isUnstorableInput } from "../platform/SqlErrors.ts"

const unstorable = () => ValidationError.field("body", "The given data contains a value that cannot be stored.")

/**
 * The framework's own failures in our envelope ([D11]): decode errors (422, or 404 for an
 * impossible path id), a body that is not JSON (422 `errors.body`), no route (404/405),
 * a lost database (503) and any defect (500, logged, nothing internal in the body).
 * Declared errors pass through to their schema encoders.
 */
export const errorMapping = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(
  api: HttpApi.HttpApi<ApiId, Groups, E | ValidationError, R>
) =>
  Layer.unwrapEffect(
    Effect.map(Metrics, (metrics) => {
      let shapes: ReadonlyArray<RouteShape> | undefined
      // the database's failures are counted by kind ([D102])
      const lostDatabase = () => {
        metrics.databaseError("connection_lost")
        return unavailable()
      }
      const unstorableInput = () => {
        metrics.databaseError("unstorable_input")
        return unstorable()
      }
      return HttpApiBuilder.middleware(api, (app) =>
        Effect.catchAllCause(app, (cause) =>
          Effect.gen(function* () {
            const failure = Cause.failureOption(cause)
            if (Option.isSome(failure)) {
              const e: unknown = failure.value
              if (e instanceof HttpApiError.HttpApiDecodeError) {
                const validation = yield* diagnoseDecodeError((shapes ??= routeShapes(api)), e)
                return validation ? yield* Effect.fail(validation) : notFound()
              }
              if (HttpServerError.isServerError(e) && e._tag === "RouteNotFound") {
                const path = pathname(e.request.url)
                const allow = allowedMethods((shapes ??= routeShapes(api)), path)
                return allow.length > 0 ? envelope(405, "Method not allowed.", { allow: allow.join(", ") }) : notFound()
              }
              if (isConnectionLoss(e)) return lostDatabase()
              if (isUnstorableInput(e)) return yield* Effect.fail(unstorableInput())
              if (e instanceof SqlError) {
                metrics.databaseError("query")
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
              if (isConnectionLoss(d)) return lostDatabase()
              if (isUnstorableInput(d)) return yield* Effect.fail(unstorableInput())
              if (d instanceof SqlError) metrics.databaseError("query")
            }
            yield* Effect.logError("unhandled defect", cause)
            return internalError()
          })
        )
      )
    })
  )
