import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { escapeHtml } from "../platform/EscapeHtml.ts"

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

export { escapeHtml }

/**
 * A whole server-rendered page ([D26]) in a language ([D120]): `lang` on the document, and
 * `dir="rtl"` for a right-to-left one (a left-to-right one keeps the default). `body` is HTML already escaped by the caller.
 */
export const htmlPage = (options: {
  readonly status: number
  readonly lang: string
  readonly dir: "ltr" | "rtl"
  readonly title: string
  readonly style: string
  readonly body: string
}): HttpServerResponse.HttpServerResponse =>
  htmlResponse(
    options.status,
    `<!doctype html>
<html lang="${escapeHtml(options.lang)}"${options.dir === "rtl" ? ` dir="rtl"` : ""}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(options.title)}</title>
<style>
${options.style}
</style>
</head>
<body>
<main>
<h1>${escapeHtml(options.title)}</h1>
${options.body}
</main>
</body>
</html>
`
  )
