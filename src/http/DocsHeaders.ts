import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"

/**
 * [D117]: what `/docs` (Swagger UI, its script, styles and the document inlined) sends: no MIME
 * sniffing, no referrer, never framed, nothing loaded from elsewhere. The page's own inline
 * script and styles are what it runs on; "Try it out" calls this origin only.
 */
export const DOCS_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
} as const

const DOCS_PATHS = new Set(["/docs", "/docs/"])

const withDocsHeaders = (_request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) =>
  Effect.succeed(HttpServerResponse.setHeaders(response, DOCS_HEADERS))

/**
 * Adds {@link DOCS_HEADERS} to the answers of `/docs`, in a pre-response handler: the server has
 * sent the response by the time the app returns it to a middleware.
 */
export const docsHeaders = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const query = request.url.indexOf("?")
    const path = query === -1 ? request.url : request.url.slice(0, query)
    return DOCS_PATHS.has(path) ? Effect.zipRight(HttpApp.appendPreResponseHandler(withDocsHeaders), app) : app
  })
