import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"
import { BearerTokens, requestPrincipal } from "./Auth.ts"
import { withRequestOrigin } from "./ClientAddress.ts"
import { routeMatcher } from "./RouteTemplates.ts"

/** One admin write as the audit log keeps it ([D100]): never a body. */
export interface AdminWrite {
  /** `<METHOD> <route template>`, e.g. `PUT /v1/admin/users/:user` */
  readonly action: string
  /** `<name>:<id>` of the path's last parameter, or of the id the answer created */
  readonly resource: string | null
  readonly actorId: number
  readonly actorKind: "token" | "api_key"
}

/** Where admin writes are appended: the audit room provides it (`src/audit/Http.ts`). */
export class AdminWrites extends Context.Tag("AdminWrites")<
  AdminWrites,
  {
    readonly record: (write: AdminWrite) => Effect.Effect<void>
  }
>() {}

const ADMIN = "/v1/admin/"
const decoder = new TextDecoder()

/** `plans` -> `plan`: the name of a created resource by the collection it was posted to */
const singular = (segment: string) => (segment.endsWith("ies") ? `${segment.slice(0, -3)}y` : segment.replace(/s$/, ""))

/** the id the answer's `data` carries (`id`, else `uuid`), when the body is JSON bytes */
const createdId = (response: HttpServerResponse.HttpServerResponse): string | undefined => {
  if (response.body._tag !== "Uint8Array") return undefined
  try {
    const body: unknown = JSON.parse(decoder.decode(response.body.body))
    const data = typeof body === "object" && body !== null && "data" in body ? body.data : undefined
    if (typeof data !== "object" || data === null) return undefined
    const id = "id" in data ? data.id : "uuid" in data ? data.uuid : undefined
    return typeof id === "number" || typeof id === "string" ? String(id) : undefined
  } catch {
    return undefined
  }
}

/** the resource of a write: the path's last parameter, or what a POST without one created */
const resourceOf = (template: string, path: string, method: string, response: HttpServerResponse.HttpServerResponse) => {
  const names = template.split("/")
  const values = path.split("/")
  for (let i = names.length - 1; i >= 0; i--) {
    if (names[i]!.startsWith(":")) return `${names[i]!.slice(1)}:${decodeURIComponent(values[i] ?? "")}`
  }
  const id = method === "POST" ? createdId(response) : undefined
  return id === undefined ? null : `${singular(names[names.length - 1]!)}:${id}`
}

/**
 * Every admin write, appended once it succeeded ([D100]): each route under `/v1/admin` other
 * than GET (and HEAD) answered 2xx, with its route template, the resource id from its path,
 * the actor and the kind of their token. One place for every admin route, present and future.
 */
export const adminWritesAudit = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R>(api: HttpApi.HttpApi<ApiId, Groups, E, R>) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const writes = yield* AdminWrites
      const tokens = yield* BearerTokens
      const templateOf = routeMatcher(api, [], (template) => template)
      // the row carries the request's address and user agent, whichever middleware runs first
      const origin = withRequestOrigin(yield* AppConfig)
      return HttpApiBuilder.middleware((app) =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
          const path = request.url.split("?")[0]!
          if (request.method === "GET" || request.method === "HEAD" || !path.startsWith(ADMIN)) return app
          return origin(
            Effect.tap(app, (response) =>
              Effect.gen(function* () {
                if (response.status < 200 || response.status >= 300) return
                const template = templateOf(path)
                const principal = yield* requestPrincipal(tokens)
                if (template === undefined || Option.isNone(principal)) return
                yield* writes.record({
                  action: `${request.method} ${template}`,
                  resource: resourceOf(template, path.replace(/\/$/, ""), request.method, response),
                  actorId: principal.value.userId,
                  actorKind: principal.value.kind
                })
              })
            )
          )
        })
      )
    })
  )
