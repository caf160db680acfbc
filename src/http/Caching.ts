import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import { matchesEtag } from "../platform/Etag.ts"

/**
 * HTTP caching of the public catalogue's reads (issue 40): `GET`/`HEAD` of `/v1/plans` and what
 * is under it answer an `ETag` (a hash of the body) and `Cache-Control: public, max-age=60`; a
 * request whose `If-None-Match` names that ETag gets 304 with no body. A public list is made
 * cheap for its clients by HTTP, inside the one pipeline, not by a route beside it.
 */
export const CATALOG_CACHE_CONTROL = "public, max-age=60"

const cacheable = (request: HttpServerRequest.HttpServerRequest) => {
  if (request.method !== "GET" && request.method !== "HEAD") return false
  // the path and query (an in-process handler's request carries the origin too)
  const url = request.url.charCodeAt(0) === 47 ? request.url : request.url.slice(request.url.indexOf("/", request.url.indexOf("//") + 2))
  if (!url.startsWith("/v1/plans")) return false
  const next = url.charCodeAt(9)
  // `/v1/plans`, `/v1/plans?...`, `/v1/plans/...`
  return Number.isNaN(next) || next === 47 || next === 63
}

/** The strong entity tag of a body. */
export const etagOf = (body: Uint8Array): string => `"${Bun.hash(body).toString(36)}-${body.byteLength.toString(36)}"`

/** `ETag` and `Cache-Control` on a catalogue read's 200, or the 304 that replaces it. */
const revalidate = (request: HttpServerRequest.HttpServerRequest, response: HttpServerResponse.HttpServerResponse) => {
  if (response.status !== 200 || response.body._tag !== "Uint8Array") return Effect.succeed(response)
  const etag = etagOf(response.body.body)
  const headers = { etag, "cache-control": CATALOG_CACHE_CONTROL }
  return Effect.succeed(
    matchesEtag(request.headers["if-none-match"], etag)
      ? HttpServerResponse.empty({ status: 304, headers: { ...response.headers, ...headers } })
      : HttpServerResponse.setHeaders(response, headers)
  )
}

// the server has sent the response by the time `app` returns: this goes in a pre-response handler
export const catalogCaching = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    cacheable(request) ? Effect.zipRight(HttpApp.appendPreResponseHandler(revalidate), app) : app
  )

/** `Cache-Control: no-store` on every answer of a group that carries secrets or per-user state */
export const noStore = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setHeader(response, "cache-control", "no-store"))
)
