import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import consoleEntry from "../../web/console/index.html"
import portalEntry from "../../web/portal/index.html"

/*
 * [D118]: the customer portal at `/` and the operator console at `/admin/`, two single-page apps
 * from `web/`, served by this process. Bun bundles their HTML entry points: `bun build --compile`
 * embeds the bundles in the binary (the import then lists the built files); under `bun run` they
 * are bundled here, in memory, at the first request for a page (no build step for a user). Either
 * way this module answers them itself, so every page carries the headers below.
 */

/** The policy of every HTML answer of the portal and the console ([D118], exactly). */
export const APP_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'"

export const APP_HTML_HEADERS = {
  "content-security-policy": APP_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store"
} as const

/** Built assets carry their content's hash in their name: cached for a year, never revalidated. */
export const ASSET_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "public, max-age=31536000, immutable"
} as const

interface Asset {
  readonly body: Uint8Array
  readonly contentType: string
}

export interface PortalBundle {
  readonly portal: string
  readonly console: string
  /** by URL path (`/chunk-1a2b3c4d.js`) */
  readonly assets: ReadonlyMap<string, Asset>
  /** every built file with its size, for `scripts/portal-size.ts` */
  readonly files: ReadonlyArray<{ readonly path: string; readonly bytes: Uint8Array; readonly entry: "portal" | "console" | undefined }>
}

const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  map: "application/json; charset=utf-8",
  html: "text/html; charset=utf-8",
  svg: "image/svg+xml",
  png: "image/png",
  woff2: "font/woff2",
  woff: "font/woff",
  ttf: "font/ttf",
  json: "application/json; charset=utf-8"
}
const typeOf = (path: string) => TYPES[path.slice(path.lastIndexOf(".") + 1)] ?? "application/octet-stream"

/** The options both the server (under `bun run`) and `scripts/portal-size.ts` bundle with. */
export const BUILD_OPTIONS = {
  target: "browser",
  minify: true,
  splitting: true,
  publicPath: "/",
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  naming: { entry: "[dir]/[name]-[hash].[ext]", chunk: "chunk-[hash].[ext]", asset: "[name]-[hash].[ext]" }
} as const

const urlPath = (path: string) => `/${path.replace(/^\.?\//, "").replace(/^\$bunfs\/root\//, "")}`

/** Bundles `web/` now, in memory (`bun run`; the size script). */
export const buildPortal = async (): Promise<PortalBundle> => {
  const result = await Bun.build({ ...BUILD_OPTIONS, entrypoints: [portalEntry.index, consoleEntry.index] })
  if (!result.success) throw new AggregateError(result.logs, "the portal's bundle failed")
  const files: Array<PortalBundle["files"][number]> = []
  for (const output of result.outputs) {
    const path = urlPath(output.path)
    const entry = path.endsWith(".html") ? (path.startsWith("/console/") ? "console" : "portal") : undefined
    files.push({ path, bytes: new Uint8Array(await output.arrayBuffer()), entry })
  }
  return collect(files)
}

/** The bundles `bun build --compile` embedded: the HTML imports list their files. */
const embedded = async (): Promise<PortalBundle | undefined> => {
  const pairs = [
    ["portal", portalEntry],
    ["console", consoleEntry]
  ] as const
  if (pairs.some(([, bundle]) => bundle.files === undefined)) return undefined
  const files: Array<PortalBundle["files"][number]> = []
  for (const [name, bundle] of pairs) {
    for (const file of bundle.files ?? []) {
      const bytes = new Uint8Array(await Bun.file(file.path).arrayBuffer())
      files.push({ path: urlPath(file.path.replace(/^\/?\$bunfs\/root\//, "")), bytes, entry: file.path === bundle.index ? name : undefined })
    }
  }
  return collect(files)
}

const collect = (files: ReadonlyArray<PortalBundle["files"][number]>): PortalBundle => {
  const decoder = new TextDecoder()
  const html = (name: "portal" | "console") => {
    const file = files.find((f) => f.entry === name)
    if (file === undefined) throw new Error(`the ${name}'s HTML entry is missing from its bundle`)
    return decoder.decode(file.bytes)
  }
  const assets = new Map<string, Asset>()
  for (const file of files) {
    if (file.path.endsWith(".html")) continue
    assets.set(file.path, { body: file.bytes, contentType: typeOf(file.path) })
  }
  return { portal: html("portal"), console: html("console"), assets, files }
}

let loading: Promise<PortalBundle> | undefined

/** The bundle, made (or read from the binary) once, at the first request that needs it. */
export const loadPortal = () => {
  loading ??= embedded().then((built) => built ?? buildPortal())
  loading.catch(() => {
    loading = undefined
  })
  return loading
}

/**
 * Paths that stay the server's own ([D118]): the API, the one-link subscriptions ([D122]), the
 * documents, the metrics and the server-rendered pages of [D26].
 */
export const isServerPath = (path: string) =>
  path === "/v1" ||
  path.startsWith("/v1/") ||
  path.startsWith("/s/") ||
  path === "/docs" ||
  path.startsWith("/docs/") ||
  path === "/metrics" ||
  path === "/verify-email" ||
  path === "/reset-password" ||
  path.startsWith("/pay/")

const isConsolePath = (path: string) => path === "/admin" || path.startsWith("/admin/")

const htmlAnswer = (html: string) => HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8", headers: APP_HTML_HEADERS })

/**
 * Innermost around the app: a `GET`/`HEAD` of a built asset answers it, of `/admin/...` the
 * console, of any other path outside {@link isServerPath} the portal (which shows its own
 * not-found page); everything else goes on to the API, whose unknown paths stay its 404.
 */
export const portalPages = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return app
    const query = request.url.indexOf("?")
    const path = query === -1 ? request.url : request.url.slice(0, query)
    if (isServerPath(path)) return app
    return Effect.flatMap(Effect.promise(loadPortal), (bundle) => {
      const asset = bundle.assets.get(path)
      if (asset !== undefined) {
        return Effect.succeed(HttpServerResponse.uint8Array(asset.body, { contentType: asset.contentType, headers: ASSET_HEADERS }))
      }
      return Effect.succeed(htmlAnswer(isConsolePath(path) ? bundle.console : bundle.portal))
    })
  })
