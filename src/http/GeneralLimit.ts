import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { AppConfig } from "../platform/Config.ts"
import type { Metrics } from "../platform/Metrics.ts"
import { RateLimiter } from "../platform/RateLimiter.ts"
import { type BearerTokens, hasCallerCredential, requestPrincipal } from "./Auth.ts"
import { clientAddressWith } from "./ClientAddress.ts"
import { envelope } from "./Responses.ts"

/** The one in-memory limiter of the general limit, shared by every request of a server. */
export class GeneralLimiter extends Effect.Service<GeneralLimiter>()("http/GeneralLimiter", {
  effect: Effect.map(RateLimiter.memory, (limiter) => ({ limiter }))
}) {}

/**
 * The spec's other routes: `GENERAL_RATE_LIMIT` a minute per user (a live bearer token: all of a
 * user's tokens count together) or else per address, in memory ([D30]). A token that is not live
 * counts against the address, so rotating made-up tokens buys nothing.
 */
const OWN_LIMITS =
  /^\/v1\/(auth\/(login|session|forgot-password|resend-verification|register|reset-password|verify-email)|tickets(\/[^/]+\/reply)?|promos\/validate)\/?$/

/**
 * Issue 34: the signed payment webhooks (`manual`, Stripe and every other gateway's) are not
 * counted: a provider delivers from a few addresses in bursts, and a refused delivery is money
 * waiting. Their signature is checked before anything else is done.
 */
const PAYMENT_WEBHOOKS = /^\/v1\/webhooks\/payments\/[^/]+\/?$/

export const generalLimit =
  (limiter: RateLimiter["Type"], config: AppConfig["Type"], tokens: BearerTokens["Type"], metrics: Metrics["Type"]) => (app: HttpApp.Default) =>
    config.generalRateLimit === 0
      ? app
      : Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          // the routes with a limit of their own count against it, shared
          const path = request.url.split("?")[0]!
          if (request.method === "POST" && (OWN_LIMITS.test(path) || PAYMENT_WEBHOOKS.test(path))) return yield* app
          // verified once: `Authentication` reuses the answer
          const principal = hasCallerCredential(request) ? yield* requestPrincipal(tokens) : Option.none()
          const key = Option.isSome(principal) ? `general:user:${principal.value.userId}` : `general:ip:${yield* clientAddressWith(config)}`
          const hit = yield* Effect.orDie(limiter.hit(key, config.generalRateLimit))
          if (!hit.allowed) {
            metrics.rateLimitRefused("general")
            return envelope(429, "Too Many Attempts.", { "retry-after": String(hit.retryAfter) })
          }
          return yield* app
        })
