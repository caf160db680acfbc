import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either } from "effect"
import { Api } from "../../src/Api.ts"
import type { TestApp } from "./app.ts"

/**
 * The typed client of the contract (`HttpApiClient.make(Api)`, issue 24), served by the test
 * app's in-process handler like `app.client(token?)`, with extra request headers (a client
 * address of its own, so the per-address limits of [D30] stay out of happy-path tests).
 */
export const typedClient = (app: TestApp, options: { readonly token?: string; readonly headers?: Record<string, string> } = {}) =>
  Effect.runPromise(
    HttpApiClient.make(Api, {
      baseUrl: "http://localhost:3000",
      transformClient: HttpClient.mapRequest((request) => {
        const withHeaders = HttpClientRequest.setHeaders(request, options.headers ?? {})
        return options.token === undefined ? withHeaders : HttpClientRequest.bearerToken(withHeaders, options.token)
      })
    }).pipe(
      Effect.provide(FetchHttpClient.layer),
      Effect.provideService(
        FetchHttpClient.Fetch,
        Object.assign((input: RequestInfo | URL, init?: RequestInit) => app.fetch(new Request(input, init)), { preconnect: fetch.preconnect })
      )
    )
  )

export type TypedClient = Awaited<ReturnType<typeof typedClient>>

/** runs one typed call and answers its decoded success; a failure fails the test with its tag */
export const ok = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isLeft(result)) {
    const error: unknown = result.left
    const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : "error"
    throw new Error(`typed call failed: ${tag} ${JSON.stringify(error)}`)
  }
  return result.right
}

/** runs one typed call that must fail, and answers the decoded error (a declared error class) */
export const fails = async <A, E>(effect: Effect.Effect<A, E>): Promise<E> => {
  const result = await Effect.runPromise(Effect.either(effect))
  if (Either.isRight(result)) throw new Error(`typed call succeeded: ${JSON.stringify(result.right)}`)
  return result.left
}

/** a registration answered with its token (no `X-Session: cookie`, [D119]) */
export const withToken = <R extends { readonly user: unknown }>(registered: R): Extract<R, { readonly token: string }> => {
  if (!("token" in registered) || typeof registered.token !== "string") throw new Error("registration answered no token")
  return registered as Extract<R, { readonly token: string }>
}
