import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import { ValidationError } from "../platform/Errors.ts"

/** Deeper JSON is refused before it is parsed: no body of the API nests past a few levels. */
export const MAX_JSON_DEPTH = 64

const isJsonType = (contentType: string): boolean => {
  const media = contentType.split(";")[0]!.trim().toLowerCase()
  return media === "application/json" || (media.startsWith("application/") && media.endsWith("+json"))
}

/** The deepest nesting of a JSON text, counted without parsing it (strings skipped). */
const nestingExceeds = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92)
        i++ // backslash: the next character is escaped
      else if (c === 34) inString = false
    } else if (c === 34) {
      inString = true
    } else if (c === 91 || c === 123) {
      if (++depth > limit) return true
    } else if (c === 93 || c === 125) {
      depth--
    }
  }
  return false
}

const refuse = (request: HttpServerRequest.HttpServerRequest, text: string) =>
  new HttpServerError.RequestError({ request, reason: "Decode", cause: ValidationError.field("body", text) })

/**
 * The one decoded body of a request to the JSON API ([D11] rev. 2): a body whose content type
 * is not JSON (form-encoded, multipart, text, none) is never parsed, and JSON nested past
 * `MAX_JSON_DEPTH` is refused before it is parsed. Nothing answers here: the request goes on
 * with `json` replaced by this decision, so authentication (401) and the rate limits (429)
 * still come first, the rate limits read the same body as validation, and a route without a
 * payload never reads it. A refusal reaches the error mapping as a `RequestError` whose
 * cause is the 422 to answer.
 */
export const decodeJsonBody = (request: HttpServerRequest.HttpServerRequest) => {
  const contentType = request.headers["content-type"]
  return Effect.cached(
    Effect.flatMap(
      Effect.orElseSucceed(request.text, () => ""),
      (text): Effect.Effect<unknown, HttpServerError.RequestError> => {
        if (contentType === undefined ? text.length > 0 : !isJsonType(contentType)) {
          return Effect.fail(refuse(request, "The body must be sent as application/json."))
        }
        if (nestingExceeds(text, MAX_JSON_DEPTH)) {
          return Effect.fail(refuse(request, `The body must not be nested more than ${MAX_JSON_DEPTH} levels deep.`))
        }
        try {
          return Effect.succeed(JSON.parse(text) as unknown)
        } catch {
          return Effect.fail(refuse(request, "The body must be valid JSON."))
        }
      }
    )
  )
}

/**
 * The request as the API sees it: `json` is `decodeJsonBody`, and the content type reads JSON
 * so the framework's payload decoder asks `json` (it would otherwise parse forms and multipart
 * itself). Only `/v1/` is the JSON API; the HTML pages read their forms as before.
 */
export const jsonBody = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return app
    if (!request.url.startsWith("/v1/")) return app
    return Effect.flatMap(decodeJsonBody(request), (json) => {
      const headers = { ...request.headers, "content-type": "application/json" }
      // `text` is the original's one cached read: a handler that reads the raw body (the
      // webhook's signature) and the JSON decoder share it, whichever comes first
      const view: HttpServerRequest.HttpServerRequest = Object.create(request, {
        json: { value: json, enumerable: false },
        text: { value: request.text, enumerable: false },
        headers: { value: headers, enumerable: false }
      })
      return Effect.provideService(app, HttpServerRequest.HttpServerRequest, view)
    })
  })
