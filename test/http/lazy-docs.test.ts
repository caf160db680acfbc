import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSwagger from "@effect/platform/HttpApiSwagger"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import * as OpenApi from "@effect/platform/OpenApi"
import { afterAll, beforeAll, expect, test } from "bun:test"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../src/Api.ts"
import { DOCS_HEADERS } from "../../src/http/DocsHeaders.ts"
import { swaggerApiOf } from "../../src/http/LazyDocs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 27 (idle memory): `/docs` and `/v1/openapi.json` are made at their first request, not at
// start-up. They must stay what the framework's layers built eagerly before: same status, same
// headers, same bytes, whichever request comes first and however many come at once.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ reset: false })
})
afterAll(() => app.dispose())

/** The two documents as the framework's own layers serve them when built at start-up (the old way). */
const eagerDocuments = () =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const api = { api: Api as unknown as HttpApi.Api["Type"]["api"], context: Context.empty() }
        const layers = Layer.mergeAll(
          // issue 34: the page shows the document without its HEAD twins
          HttpApiSwagger.layer({ path: "/docs" }).pipe(Layer.provide(Layer.succeed(HttpApi.Api, swaggerApiOf(api)))),
          HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" }).pipe(Layer.provide(Layer.succeed(HttpApi.Api, api)))
        ).pipe(Layer.provideMerge(HttpApiBuilder.Router.Live))
        const context = yield* Layer.build(layers)
        const router = yield* Effect.provide(HttpApiBuilder.Router.router, context)
        const handler = HttpApp.toWebHandler(Effect.provide(router, HttpServer.layerContext))
        const read = async (path: string) => {
          const res = await handler(new Request(`http://localhost:3000${path}`))
          return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() }
        }
        return { docs: yield* Effect.promise(() => read("/docs")), openapi: yield* Effect.promise(() => read("/v1/openapi.json")) }
      })
    )
  )

test("five first requests at once for each document get the framework's document, byte for byte, with the same headers", async () => {
  const eager = await eagerDocuments()
  expect(eager.docs.status).toBe(200)
  expect(eager.openapi.status).toBe(200)

  const [docs, openapi] = await Promise.all([
    Promise.all(Array.from({ length: 5 }, () => app.get("/docs", { headers: { accept: "text/html" } }))),
    Promise.all(Array.from({ length: 5 }, () => app.get("/v1/openapi.json")))
  ])
  for (const res of docs) {
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe(eager.docs.contentType)
    for (const [name, value] of Object.entries(DOCS_HEADERS)) expect(res.headers.get(name)).toBe(value)
    expect(res.text).toBe(eager.docs.text)
  }
  for (const res of openapi) {
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe(eager.openapi.contentType)
    expect(res.text).toBe(eager.openapi.text)
  }
  // the document of the contract, with the project's transform applied ([D117]'s page inlines the same one)
  expect(JSON.parse(openapi[0]!.text)).toEqual(JSON.parse(JSON.stringify(OpenApi.fromApi(Api))))
  expect(docs[0]!.text).toContain(JSON.stringify(OpenApi.fromApi(Api).info.title))
})

test("after the first request the documents are the same ones; another method on them is still the 404 it was", async () => {
  const first = await app.get("/v1/openapi.json")
  const again = await app.get("/v1/openapi.json")
  expect(again.text).toBe(first.text)
  const wrong = await app.request("POST", "/docs")
  expect(wrong.status).toBe(404)
  expect(wrong.body).toEqual({ success: false, message: "Resource not found." })
})
