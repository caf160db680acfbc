import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { bearerSecret } from "./Auth.ts"
import { clientIp, isLoopback } from "./ClientAddress.ts"
import { NotFound, Unauthenticated } from "./Errors.ts"
import { MetricsAccess } from "./Middleware.ts"

export { MetricsAccess }

export const MetricsAccessLive = Layer.effect(
  MetricsAccess,
  Effect.map(AppConfig, (config) =>
    Option.match(config.metricsToken, {
      onSome: (token) => {
        // both sides hashed: equal lengths, so the comparison tells nothing of the token's length
        const expected = sha256Hex(Redacted.value(token))
        return Effect.flatMap(bearerSecret, (secret) =>
          Option.isSome(secret) && constantTimeEqual(sha256Hex(secret.value), expected) ? Effect.void : Effect.fail(new Unauthenticated())
        )
      },
      onNone: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          isLoopback(clientIp(request, config.trustProxy)) ? Effect.void : Effect.fail(new NotFound())
        )
    })
  )
)
