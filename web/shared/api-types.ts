/**
 * The portal's view of the contract, by type only: `import type` of `src/Api.ts` is erased from
 * the bundle, so no server module reaches the browser, yet a changed endpoint, payload or answer
 * breaks the portal's compilation (`npx tsc --noEmit -p .`).
 *
 * Requests go by the generated table of `endpoints.ts`; answers are typed by the endpoints'
 * schemas without being decoded by them. `HttpApiClient.make(Api)` in the browser was measured
 * and not adopted: 335 KB gzipped on its own, over the portal's 250 KB budget (docs/decisions.md,
 * "The portal and the console", and `scripts/portal-client-size.ts`).
 */
import type * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import type { Api } from "../../src/Api.ts"

type Groups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never

export type GroupName = HttpApiGroup.HttpApiGroup.Name<Groups>

type EndpointsOf<G extends GroupName> = HttpApiGroup.HttpApiGroup.EndpointsWithName<Groups, G>

export type EndpointName<G extends GroupName> = HttpApiEndpoint.HttpApiEndpoint.Name<EndpointsOf<G>>

type Endpoint<G extends GroupName, N extends EndpointName<G>> = HttpApiEndpoint.HttpApiEndpoint.WithName<EndpointsOf<G>, N>

/** What the wire carries for a decoded value: dates travel as ISO strings. */
export type Wire<T> = T extends Date
  ? string
  : T extends string | number | boolean | null | undefined
    ? T
    : T extends ReadonlyArray<infer U>
      ? ReadonlyArray<Wire<U>>
      : T extends object
        ? { readonly [K in keyof T]: Wire<T[K]> }
        : T

// biome-ignore lint/suspicious/noConfusingVoidType: the framework types an absent path as `void` (HttpApiEndpoint.ClientRequest)
type Present<K extends string, T> = [T] extends [never] ? {} : [T] extends [void] ? {} : { readonly [P in K]: T }

/** The request of an endpoint: `path`, `urlParams` (all optional here) and `payload`, as the typed client names them. */
export type RequestOf<G extends GroupName, N extends EndpointName<G>> = Present<"path", HttpApiEndpoint.HttpApiEndpoint.PathParsed<Endpoint<G, N>>> &
  ([HttpApiEndpoint.HttpApiEndpoint.UrlParams<Endpoint<G, N>>] extends [never]
    ? {}
    : { readonly urlParams?: Partial<HttpApiEndpoint.HttpApiEndpoint.UrlParams<Endpoint<G, N>>> }) &
  Present<"payload", HttpApiEndpoint.HttpApiEndpoint.Payload<Endpoint<G, N>>>

/** The decoded answer (the envelope's `data`, or `{data, meta, links}` of a page) as JSON has it. */
export type SuccessOf<G extends GroupName, N extends EndpointName<G>> = Wire<HttpApiEndpoint.HttpApiEndpoint.Success<Endpoint<G, N>>>

/** How an answer unwraps (`src/http/Envelope.ts`): `Ok`, `OkPage`, `Confirmation`, `OkMessage`, or not JSON. */
export type AnswerKind = "data" | "page" | "message" | "messageData" | "raw"

/** The shape `endpoints.ts` must have: one `[method, path, kind]` per endpoint of every group. */
export type EndpointTable = {
  readonly [G in GroupName]: { readonly [N in EndpointName<G>]: readonly [string, string, AnswerKind] }
}
