import { declareWhatEveryRouteDoes } from "./OpenApiContract.ts"
import { addRequestExamples } from "./OpenApiExamples.ts"

/**
 * The framework documents its own 400 decode error on every endpoint; ours is the 422 of
 * [D12] (declared on the Api), so the default goes from the document.
 */
type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null

export const dropFrameworkDefaults = (spec: Json): Json => {
  const paths = isObject(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !isObject(operation["responses"])) continue
      const responses = operation["responses"]
      const bad = responses["400"]
      if (isObject(bad) && JSON.stringify(bad).includes("HttpApiDecodeError")) delete responses["400"]
    }
  }
  const components = isObject(spec["components"]) ? spec["components"] : {}
  const schemas = isObject(components["schemas"]) ? components["schemas"] : {}
  for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete schemas[name]
  return spec
}

/**
 * Effect's JSON Schema names the empty struct `$id: "/schemas/{}"` on every use: one `$id` on
 * many schemas, which strict validators refuse. The schema stays; the id goes.
 */
const dropGeneratedIds = (value: unknown): void => {
  if (Array.isArray(value)) {
    for (const v of value) dropGeneratedIds(v)
    return
  }
  if (!isObject(value)) return
  if (typeof value["$id"] === "string" && value["$id"].startsWith("/schemas/")) delete value["$id"]
  Object.values(value).forEach(dropGeneratedIds)
}

/**
 * OpenAPI 3.1 wants a license's `url` or SPDX `identifier` (issue 34: strict validators refused a
 * name alone); the framework's type knows only `url`, so the identifier is written here.
 */
const identifyLicense = (spec: Json) => {
  const info = isObject(spec["info"]) ? spec["info"] : undefined
  const license = info !== undefined && isObject(info["license"]) ? info["license"] : undefined
  if (license !== undefined && license["url"] === undefined) license["identifier"] ??= "LicenseRef-Proprietary"
}

export const documentTransform = (spec: Json): Json => {
  dropGeneratedIds(spec)
  identifyLicense(spec)
  return addRequestExamples(declareWhatEveryRouteDoes(dropFrameworkDefaults(spec)))
}

/**
 * The document `/docs` shows (issue 34): the same, without the `HEAD` twin of every `GET`
 * (`/v1/openapi.json` keeps them; the page would list each read twice).
 */
export const swaggerTransform = (spec: Json): Json => {
  const document = documentTransform(spec)
  const paths = isObject(document["paths"]) ? document["paths"] : {}
  for (const item of Object.values(paths)) if (isObject(item)) delete item["head"]
  return document
}

export const API_DESCRIPTION = [
  "The API behind a paid VPN service: accounts, plans and orders, invoices and payments, VPN access",
  "(WireGuard and OpenVPN configs for your devices), bandwidth, support, and the routes the VPN",
  "servers' node agents use.",
  "",
  'Every JSON answer is an envelope: `{"success": true, "message"?, "data"?, "meta"?}` on success,',
  '`{"success": false, "message", "errors"?}` on failure, where `errors` maps each refused field to',
  "its messages (422). Paginated lists take `?page=` (15 a page) and answer `meta`",
  "`{current_page, last_page, per_page, total}`.",
  "",
  "Three credentials, each a bearer token: a user's access token (`userToken`), an API key with",
  "scopes (`apiKey`), and a VPN server's node token (`nodeToken`); each operation lists the ones it",
  "takes. Every route is rate limited (429 with `Retry-After`); a path served without the method",
  "asked is 405 with `Allow`; `HEAD` answers wherever `GET` does. Unknown fields in a request body",
  "are ignored."
].join("\n")
