import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpRouter from "@effect/platform/HttpRouter"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as OpenApi from "@effect/platform/OpenApi"
import { swaggerTransform } from "./OpenApiDoc.ts"

/** Where the two documents are served. */
export const DOCS_PATH = "/docs"
export const OPENAPI_PATH = "/v1/openapi.json"

/** The API as `/docs` shows it: without the `HEAD` twin of every `GET` (issue 34). */
export const swaggerApiOf = (api: HttpApi.Api["Type"]): HttpApi.Api["Type"] => ({
  ...api,
  api: api.api.annotateContext(OpenApi.annotations({ transform: swaggerTransform })) as HttpApi.Api["Type"]["api"]
})

type DocsRouter = HttpRouter.HttpRouter<unknown, HttpRouter.HttpRouter.DefaultServices>

/**
 * The framework's own document layers (`HttpApiSwagger.layer`, `HttpApiBuilder.middlewareOpenApi`)
 * on a router of their own, with the API they describe. Each builds the OpenAPI document, and the
 * Swagger page carries about 2 MB of Swagger UI: together about 18 MB resident, so they are built
 * at the first request for either document, not at start-up (issue 27; docs/decisions.md, "Idle
 * memory"). The answers are the framework's, byte for byte and header for header.
 */
const buildDocsRouter = (api: HttpApi.Api["Type"]): Promise<DocsRouter> =>
  Effect.runPromise(
    Effect.gen(function* () {
      const { layer: swagger } = yield* Effect.promise(() => import("@effect/platform/HttpApiSwagger"))
      const documents = Layer.mergeAll(
        swagger({ path: DOCS_PATH }).pipe(Layer.provide(Layer.succeed(HttpApi.Api, swaggerApiOf(api)))),
        HttpApiBuilder.middlewareOpenApi({ path: OPENAPI_PATH }).pipe(Layer.provide(Layer.succeed(HttpApi.Api, api)))
      ).pipe(Layer.provideMerge(HttpApiBuilder.Router.Live))
      // the documents live as long as the process: their scope is never closed
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(documents, scope).pipe(Effect.tapErrorCause(() => Scope.close(scope, Exit.void)))
      return yield* Effect.provide(HttpApiBuilder.Router.router, context)
    })
  )

/** `GET /docs` and `GET /v1/openapi.json` on the API's router; the documents are made at the first request. */
export const LazyDocsLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const api = yield* HttpApi.Api
    let built: Promise<DocsRouter> | undefined
    // a request interrupted while the documents are made does not cancel them: the next one gets them
    const load = () =>
      (built ??= buildDocsRouter(api).catch((e: unknown) => {
        built = undefined
        throw e
      }))
    const documents = Effect.flatMap(Effect.promise(load), (docs) => docs)
    yield* router.get(DOCS_PATH, documents)
    yield* router.get(OPENAPI_PATH, documents)
  })
)
