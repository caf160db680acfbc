/**
 * The typed client of the VPN subscription API (issue 28): the server's own contract (`Api`)
 * turned into a client by `HttpApiClient.make`. Payloads are checked before they are sent,
 * answers decoded by the schemas the server uses, declared errors come back as their classes.
 */
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as Effect from "effect/Effect"
import { Api } from "../../../src/Api.ts"

export { Api }

export interface ClientOptions {
  /** where the API is served, e.g. `https://api.example.com` */
  readonly baseUrl: string
  /** a user's access token, an API key or a node token, sent as `Authorization: Bearer` */
  readonly token?: string | undefined
}

/** A client of the whole contract; with a token, every request carries it. */
export const makeClient = (options: ClientOptions) =>
  HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    ...(options.token === undefined
      ? {}
      : { transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.token)) })
  })

/** The same client as a program that needs nothing: `fetch` underneath. */
export const client = (options: ClientOptions) => makeClient(options).pipe(Effect.provide(FetchHttpClient.layer))

export type VpnClient = Effect.Effect.Success<ReturnType<typeof makeClient>>
