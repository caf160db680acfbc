import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { envelope } from "./Responses.ts"

export const MAX_BODY_BYTES = 1024 * 1024

/** 413 in the envelope for bodies over 1 MiB, by `Content-Length` or by counting ([D11]). */
export const bodyLimit = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    // bodiless methods pass straight through: no generator on the hot read path (issue 8)
    if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return app
    return Effect.gen(function*() {
      const declared = request.headers["content-length"]
      if (declared !== undefined) {
        if (Number(declared) > MAX_BODY_BYTES) return envelope(413, "Payload too large.")
      } else {
        // chunked (or a body of unknown length): count it; Bun caps what it buffers at 4 MiB
        const text = yield* Effect.option(request.text)
        if (Option.isSome(text) && Buffer.byteLength(text.value) > MAX_BODY_BYTES) return envelope(413, "Payload too large.")
      }
      return yield* app
    })
  })

