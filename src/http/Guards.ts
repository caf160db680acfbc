import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AppConfig } from "../platform/Config.ts"
import { Metrics } from "../platform/Metrics.ts"
import { RateLimiter } from "../platform/RateLimiter.ts"
import { BearerTokens } from "./Auth.ts"
import { bodyLimit } from "./BodyLimit.ts"
import { withRequestOrigin } from "./ClientAddress.ts"
import { generalLimit } from "./GeneralLimit.ts"
import { jsonBody } from "./JsonBody.ts"

/**
 * The 413 and the general limit run inside the API (an API-level middleware), so their
 * responses pass through the same pre-response handlers (request id, CORS) as any other;
 * innermost, the one JSON body every endpoint, limit and decoder reads ([D11]); outermost,
 * the request's origin (address, user agent) for the rooms that record it ([D99], [D100]).
 */
export const GuardsLive = Layer.unwrapEffect(Effect.gen(function*() {
  const config = yield* AppConfig
  const tokens = yield* BearerTokens
  const metrics = yield* Metrics
  const generalLimiter = yield* RateLimiter.memory
  const origin = withRequestOrigin(config)
  return HttpApiBuilder.middleware((app) => origin(bodyLimit(generalLimit(generalLimiter, config, tokens, metrics)(jsonBody(app)))))
}))

