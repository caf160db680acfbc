/**
 * The portal's and the console's only way to the API ([D118]): same origin, the session cookie
 * of [D119] (never a token in a page script), `X-CSRF-Token` from the `vpn_csrf` cookie on every
 * write. Typed by the contract (`api-types.ts`); the envelope is unwrapped as the typed client does.
 */
import type { AnswerKind, EndpointName, GroupName, RequestOf, SuccessOf } from "./api-types.ts"
import { ENDPOINTS } from "./endpoints.ts"

/** A declared error of the API: its status, message and field errors ([D11], [D12]). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: Readonly<Record<string, ReadonlyArray<string>>> = {}
  ) {
    super(message)
  }
  /** the first message for a field, as the API wrote it */
  field(name: string): string | undefined {
    return this.errors[name]?.[0]
  }
}

/** What a failed call says to a person: the API's message, else the error's text. */
export const errorMessage = (error: unknown) => (error instanceof ApiError ? error.message : String(error))

export const csrfToken = () => {
  for (const part of document.cookie.split(";")) {
    const [name, ...rest] = part.trim().split("=")
    if (name === "vpn_csrf") return decodeURIComponent(rest.join("="))
  }
  return undefined
}

/** Called with 401 answers (the session ended): the app goes to its sign-in page. */
let onUnauthenticated: () => void = () => {}
export const setUnauthenticatedHandler = (handler: () => void) => {
  onUnauthenticated = handler
}

const query = (params: Record<string, unknown> | undefined) => {
  const search = new URLSearchParams()
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === null || value === "") continue
    search.set(key, String(value))
  }
  const text = search.toString()
  return text.length === 0 ? "" : `?${text}`
}

/** One request with the session's cookies; `body` is JSON. Throws an {@link ApiError} on an error answer. */
export const request = async (
  method: string,
  url: string,
  body?: unknown,
  kind: AnswerKind = "data",
  extraHeaders: Record<string, string> = {}
): Promise<unknown> => {
  const headers: Record<string, string> = { accept: "application/json", ...extraHeaders }
  if (method !== "GET" && method !== "HEAD") {
    const token = csrfToken()
    if (token !== undefined) headers["x-csrf-token"] = token
  }
  if (body !== undefined) headers["content-type"] = "application/json"
  const response = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? null : JSON.stringify(body)
  })
  const text = await response.text()
  let json: unknown
  try {
    json = text.length === 0 ? undefined : JSON.parse(text)
  } catch {
    json = undefined
  }
  if (!response.ok) {
    const envelope = (json ?? {}) as { message?: string; errors?: Record<string, Array<string>> }
    if (response.status === 401) onUnauthenticated()
    throw new ApiError(response.status, envelope.message ?? response.statusText, envelope.errors ?? {})
  }
  const envelope = (json ?? {}) as { data?: unknown; message?: string; meta?: unknown; links?: unknown }
  switch (kind) {
    case "data":
      return envelope.data
    case "page":
      return { data: envelope.data, meta: envelope.meta, links: envelope.links }
    case "message":
      return envelope.message
    case "messageData":
      return { message: envelope.message, data: envelope.data }
    case "raw":
      return json ?? text
  }
}

/** The URL of an endpoint for `request`'s arguments (also for links: a config file, a PDF, a QR image). */
export const urlOf = <G extends GroupName, N extends EndpointName<G>>(group: G, name: N, req?: RequestOf<G, N>) => {
  const [, template] = (ENDPOINTS[group] as Record<string, readonly [string, string, AnswerKind]>)[name as string]!
  const args = (req ?? {}) as { path?: Record<string, unknown>; urlParams?: Record<string, unknown> }
  const path = template.replace(/:(\w+)/g, (_, key: string) => encodeURIComponent(String(args.path?.[key] ?? "")))
  return `${path}${query(args.urlParams)}`
}

/** An endpoint's request, and headers the contract reads without declaring them (`X-Session: cookie`, [D119]). */
type Req<G extends GroupName, N extends EndpointName<G>> = RequestOf<G, N> & { readonly headers?: Readonly<Record<string, string>> }

type Args<G extends GroupName, N extends EndpointName<G>> = {} extends RequestOf<G, N> ? [req?: Req<G, N>] : [req: Req<G, N>]

/** `call("billing", "placeOrder", {payload})`: the endpoint of the contract, its answer typed by it. */
export const call = <G extends GroupName, N extends EndpointName<G>>(group: G, name: N, ...[req]: Args<G, N>): Promise<SuccessOf<G, N>> => {
  const [method, , kind] = (ENDPOINTS[group] as Record<string, readonly [string, string, AnswerKind]>)[name as string]!
  const payload = (req as { payload?: unknown } | undefined)?.payload
  const headers = { ...(req as { headers?: Record<string, string> } | undefined)?.headers }
  const url = urlOf(group, name, req)
  if (method === "GET" || method === "HEAD") {
    // a GET's payload is its query (as the typed client sends it)
    const extra = payload === undefined ? "" : query(payload as Record<string, unknown>).replace(/^\?/, url.includes("?") ? "&" : "?")
    return request(method, `${url}${extra}`, undefined, kind, headers) as Promise<SuccessOf<G, N>>
  }
  return request(method, url, payload ?? (method === "POST" || method === "PUT" ? {} : undefined), kind, headers) as Promise<SuccessOf<G, N>>
}
