import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"

/** The client address for limits: the socket's, or the first `X-Forwarded-For` with TRUST_PROXY. */
export const clientAddress = Effect.gen(function*() {
  return yield* clientAddressWith(yield* AppConfig)
})

export const clientAddressWith = (config: AppConfig["Type"]) => Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (config.trustProxy) {
    const forwarded = request.headers["x-forwarded-for"]?.split(",")[0]?.trim()
    if (forwarded) return forwarded
  }
  return Option.getOrElse(request.remoteAddress, () => "unknown")
})

