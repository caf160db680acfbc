/**
 * What every route does beyond its own endpoint declaration, written into the OpenAPI document so
 * that it says exactly what the server sends (issue 28): the four credentials as four security
 * schemes ([D98] key scopes, [D54] node tokens, [D119] the session cookie), the general rate limit's 429 on every route
 * ([D30]), 405 with `Allow`, `HEAD` beside every `GET`, the headers the server sends and reads,
 * and no status that a route cannot answer (413 without a body, 422 without any input, 404 on a
 * public route without a path id).
 */
type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const objectAt = (parent: Json, key: string): Json => {
  const value = parent[key]
  if (isObject(value)) return value
  const created: Json = {}
  parent[key] = created
  return created
}

const METHODS = ["get", "put", "post", "delete", "patch"] as const

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema })

const HEADERS = {
  requestId: header("This request's id, also in the server's log line for it."),
  retryAfter: header("Seconds to wait before trying again.", { type: "integer", minimum: 0 }),
  limit: header("Requests allowed in this route's window for this caller.", { type: "integer", minimum: 0 }),
  remaining: header("Requests left in the window.", { type: "integer", minimum: 0 }),
  allow: header("The methods this path serves, comma separated."),
  noStore: header("`no-store` when the answer holds a credential, a key or a file: it must not be cached."),
  disposition: header('`attachment; filename="..."`: the file name to save the download as.')
} as const

const envelopeRef = (name: string) => ({ "application/json": { schema: { $ref: `#/components/schemas/${name}` } } })

/** The security schemes: one per kind of credential, each saying which routes take it. */
export const SECURITY_SCHEMES = {
  userToken: {
    type: "http",
    scheme: "bearer",
    description:
      "An access token from `POST /v1/auth/login` or `POST /v1/auth/register`, sent as " +
      "`Authorization: Bearer <token>`. Accepted by every user route; admin routes need an admin's token."
  },
  apiKey: {
    type: "http",
    scheme: "bearer",
    bearerFormat: "vpk_<id>_<secret>",
    description:
      "An API key from `POST /v1/account/api-keys`, sent as `Authorization: Bearer vpk_...`. " +
      "It acts as its owner within its scopes, listed on each operation: `read` (GET of user routes), " +
      "`write` (the other user routes), `admin:read` and `admin:write` (admin routes, for an admin owner). " +
      "A key never signs in or out, changes the password, the e-mail or two-factor sign-in, or manages keys " +
      "and sessions: those operations list only `userToken`. Outside its scopes: 403 `Forbidden.`"
  },
  sessionCookie: {
    type: "apiKey",
    in: "cookie",
    name: "vpn_session",
    description:
      "A browser session ([D119]) from `POST /v1/auth/session` (or `POST /v1/auth/register` with " +
      "`X-Session: cookie`): the `HttpOnly` cookie `vpn_session`, accepted wherever a user's token is. A request " +
      "other than GET/HEAD must also send the header `X-CSRF-Token` equal to the `vpn_csrf` cookie issued with " +
      "that session, else 403 `CSRF token mismatch.` A `Bearer` header, when present, is used instead of the cookie."
  },
  nodeToken: {
    type: "http",
    scheme: "bearer",
    description: "A VPN server's node token (shown once by `POST /v1/admin/servers`), used by the node " + "agent on the `/v1/node/*` routes only."
  }
} as const

/** The markers the middleware tags declare (see http/Auth.ts, vpn/NodeAuth.ts). */
const USER = "userToken"
const PEOPLE_ONLY = "peopleOnly"
const NODE = "nodeToken"
const COOKIE = "sessionCookie"

const scopeFor = (method: string, path: string) => {
  const reads = method === "get" || method === "head"
  return path.startsWith("/v1/admin/") ? (reads ? "admin:read" : "admin:write") : reads ? "read" : "write"
}

const securityOf = (operation: Json, method: string, path: string): Array<Json> | undefined => {
  const declared = Array.isArray(operation["security"]) ? operation["security"].filter(isObject) : []
  const names = new Set(declared.flatMap((entry) => Object.keys(entry)))
  if (names.has(NODE)) return [{ [NODE]: [] }]
  if (names.has(PEOPLE_ONLY)) return [{ [USER]: [] }, { [COOKIE]: [] }]
  if (names.has(USER)) return [{ [USER]: [] }, { apiKey: [scopeFor(method, path)] }, { [COOKIE]: [] }]
  return undefined
}

const hasParameters = (operation: Json, where: ReadonlyArray<string>) =>
  Array.isArray(operation["parameters"]) && operation["parameters"].some((p) => isObject(p) && typeof p["in"] === "string" && where.includes(p["in"]))

const addHeaders = (response: unknown, headers: Json) => {
  if (!isObject(response)) return
  Object.assign(objectAt(response, "headers"), headers)
}

const contentTypes = (response: unknown): ReadonlyArray<string> => (isObject(response) && isObject(response["content"]) ? Object.keys(response["content"]) : [])

/**
 * A body's unknown fields are ignored, never refused ([D12]'s `Body`): its objects say so, so
 * that a client sending a newer field is not called invalid.
 */
const allowUnknownFields = (schema: unknown, components: Json, seen: Set<string>): void => {
  if (Array.isArray(schema)) {
    for (const s of schema) allowUnknownFields(s, components, seen)
    return
  }
  if (!isObject(schema)) return
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
    const name = ref.slice("#/components/schemas/".length)
    if (seen.has(name)) return
    seen.add(name)
    allowUnknownFields(components[name], components, seen)
    return
  }
  if (schema["additionalProperties"] === false) schema["additionalProperties"] = true
  for (const key of ["properties", "items", "anyOf", "oneOf", "allOf"]) {
    const inner = schema[key]
    if (key === "properties" && isObject(inner)) for (const s of Object.values(inner)) allowUnknownFields(s, components, seen)
    else allowUnknownFields(inner, components, seen)
  }
}

/** Removes one schema (the Api-wide error) from a status' answers; the status goes when nothing is left. */
const dropAlternative = (responses: Json, status: string, schemaName: string) => {
  const response = responses[status]
  if (!isObject(response) || !isObject(response["content"])) return
  const isIt = (schema: unknown) => isObject(schema) && schema["$ref"] === `#/components/schemas/${schemaName}`
  for (const media of Object.values(response["content"])) {
    if (!isObject(media)) continue
    const schema = media["schema"]
    if (isIt(schema)) {
      delete responses[status]
      return
    }
    if (isObject(schema) && Array.isArray(schema["anyOf"])) {
      const rest = schema["anyOf"].filter((alternative) => !isIt(alternative))
      media["schema"] = rest.length === 1 ? rest[0] : { ...schema, anyOf: rest }
    }
  }
}

const fixOperation = (operation: Json, method: string, path: string, schemas: Json) => {
  const responses = objectAt(operation, "responses")
  const security = securityOf(operation, method, path)
  if (security === undefined) operation["security"] = []
  else operation["security"] = security

  const body = operation["requestBody"]
  const takesBody = isObject(body)
  if (takesBody && isObject(body["content"])) {
    for (const media of Object.values(body["content"])) if (isObject(media)) allowUnknownFields(media["schema"], schemas, new Set())
  }
  if (!takesBody) delete responses["413"]
  // the Api-wide 422 of a refused input, where there is no input, unless the route refuses a state
  // with it (`answers422WithoutInput`)
  const keeps422 = operation[ANSWERS_422] === true
  delete operation[ANSWERS_422]
  if (!keeps422 && !takesBody && !hasParameters(operation, ["query", "header"])) dropAlternative(responses, "422", "ValidationError")
  // a public route without a path id has nothing to look up (the 404 of an unknown id or route)
  if (security === undefined && !hasParameters(operation, ["path"]) && !path.includes("{")) dropAlternative(responses, "404", "NotFound")

  const routeLimited = isObject(responses["429"])
  responses["429"] ??= {
    description: "Too many requests from this address (the general limit) or for this route's own limit.",
    content: envelopeRef("TooManyAttempts")
  }
  addHeaders(responses["429"], {
    "Retry-After": HEADERS.retryAfter,
    ...(routeLimited ? { "X-RateLimit-Limit": HEADERS.limit, "X-RateLimit-Remaining": HEADERS.remaining } : {})
  })
  responses["405"] = {
    description: "The path exists but not with this method: `Allow` lists the methods it serves.",
    headers: { Allow: HEADERS.allow },
    content: envelopeRef("MethodNotAllowed")
  }
  addHeaders(responses["503"], { "Retry-After": HEADERS.retryAfter })
  for (const [status, response] of Object.entries(responses)) {
    addHeaders(response, { "X-Request-Id": HEADERS.requestId })
    // a route's own limit counts before the route answers: its headers come with every answer but
    // the router's 405 (issue 34: 401, 403 and 422 carried them undeclared)
    if (routeLimited && status !== "405") {
      addHeaders(response, { "X-RateLimit-Limit": HEADERS.limit, "X-RateLimit-Remaining": HEADERS.remaining })
    }
    if (!status.startsWith("2")) continue
    // a route that declared its own (the subscription link of [D122]) keeps it
    const own = isObject(response) && isObject(response["headers"]) ? { ...response["headers"] } : {}
    // answers that hold a credential, a key or a file are `no-store` ([D11])
    if (!("Cache-Control" in own)) addHeaders(response, { "Cache-Control": HEADERS.noStore })
    const types = contentTypes(response)
    if (types.some((t) => t.startsWith("text/plain") || t.startsWith("application/pdf")) && !("Content-Disposition" in own)) {
      addHeaders(response, { "Content-Disposition": HEADERS.disposition })
    }
  }
  if (method === "get" && (path === "/v1/plans" || path.startsWith("/v1/plans/"))) declareCatalogCaching(operation, responses)
}

/** Issue 40: the catalogue's reads answer `ETag` and `Cache-Control`, and 304 on `If-None-Match` (`http/Caching.ts`). */
const declareCatalogCaching = (operation: Json, responses: Json) => {
  const etag = header("The answer's entity tag; send it back as `If-None-Match` to get 304 while it holds.")
  const cacheControl = header("`public, max-age=60`: the public catalogue may be cached for a minute.")
  if (isObject(responses["200"])) addHeaders(responses["200"], { ETag: etag, "Cache-Control": cacheControl })
  responses["304"] = {
    description: "Not modified: `If-None-Match` named the current `ETag`; no body.",
    headers: { ETag: etag, "Cache-Control": cacheControl, "X-Request-Id": HEADERS.requestId }
  }
  const parameters = Array.isArray(operation["parameters"]) ? operation["parameters"] : []
  operation["parameters"] = [
    ...parameters,
    {
      name: "If-None-Match",
      in: "header",
      required: false,
      description: "An `ETag` this route answered before: 304 while it is current.",
      schema: { type: "string" }
    }
  ]
}

/**
 * The endpoint annotation of a route that answers the Api-wide 422 without any input: a state it
 * refuses (`POST /v1/account/2fa` while two-factor sign-in is on). Removed from the document.
 */
const ANSWERS_422 = "x-answers-422-without-input"
export const answers422WithoutInput = { [ANSWERS_422]: true } as const

/**
 * An endpoint transform: these query parameters are required in the document, though the schema
 * takes them as optional so that the route checks its path first (an unknown id is 404 before
 * the query's 422).
 */
export const requiredQueryParameters =
  (...names: ReadonlyArray<string>) =>
  (operation: Json): Json => {
    const parameters = Array.isArray(operation["parameters"]) ? operation["parameters"] : []
    for (const p of parameters) if (isObject(p) && p["in"] === "query" && names.includes(String(p["name"]))) p["required"] = true
    return operation
  }

/** The public sign-in routes first (`/docs` lists them before the rest), then the others in order. */
const publicAuthFirst = (paths: Json): Json => {
  const entries = Object.entries(paths)
  const isPublicAuth = ([path, item]: [string, unknown]) =>
    path.startsWith("/v1/auth/") &&
    isObject(item) &&
    Object.values(item).every((op) => !isObject(op) || !Array.isArray(op["security"]) || op["security"].length === 0)
  return Object.fromEntries([...entries.filter(isPublicAuth), ...entries.filter((entry) => !isPublicAuth(entry))])
}

/** `HEAD` is served wherever `GET` is: the same answer without its body. */
const headOf = (get: Json): Json => {
  const responses: Json = {}
  for (const [status, response] of Object.entries(isObject(get["responses"]) ? get["responses"] : {})) {
    if (!isObject(response)) continue
    const { content: _content, ...rest } = response
    responses[status] = rest
  }
  const operationId = typeof get["operationId"] === "string" ? `${get["operationId"]}Head` : undefined
  return {
    ...get,
    ...(operationId !== undefined ? { operationId } : {}),
    summary: typeof get["summary"] === "string" ? `${get["summary"]} (headers only)` : "Headers only",
    responses
  }
}

export const declareWhatEveryRouteDoes = (spec: Json): Json => {
  const paths = isObject(spec["paths"]) ? spec["paths"] : {}
  const components = objectAt(spec, "components")
  const schemas = objectAt(components, "schemas")
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue
    for (const method of METHODS) {
      const operation = item[method]
      if (isObject(operation)) fixOperation(operation, method, path, schemas)
    }
    if (isObject(item["get"]) && item["head"] === undefined) item["head"] = headOf(item["get"])
  }
  components["securitySchemes"] = SECURITY_SCHEMES
  spec["security"] = []
  spec["paths"] = publicAuthFirst(paths)
  return spec
}
