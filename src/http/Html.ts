import * as HttpServerResponse from "@effect/platform/HttpServerResponse"

/**
 * What every HTML page sends ([D26], rev. 2): no script or frame from anywhere, inline styles
 * only, forms posting to this origin, no MIME sniffing, no referrer (links carry tokens), and
 * never cached (the pages are reached through token or signed links).
 */
export const HTML_HEADERS = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
} as const

/** An HTML page with the headers every page sends. */
export const htmlResponse = (status: number, html: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(html, { status, contentType: "text/html; charset=utf-8", headers: HTML_HEADERS })
