import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { bearerSecret } from "./Auth.ts"
import { clientIp, isLoopback } from "./ClientAddress.ts"
import { NotFound, NotFoundResponse, Unauthenticated, UnauthenticatedResponse } from "./Errors.ts"

/**
 * Who may read `GET /metrics` ([D102]): with `METRICS_TOKEN` set, a caller sending it as a bearer
 * token (anything else: 401 `Unauthenticated.`); without it, clients on this machine only, and
 * to anyone else the route does not exist (404). The address is the one `TRUST_PROXY` names.
 */
export class MetricsAccess extends HttpApiMiddleware.Tag<MetricsAccess>()("MetricsAccess", {
  failure: Schema.Union(UnauthenticatedResponse, NotFoundResponse)
}) {}

export const MetricsAccessLive = Layer.effect(
  MetricsAccess,
  Effect.map(AppConfig, (config) =>
    Option.match(config.metricsToken, {
      onSome: (token) => {
        // both sides hashed: equal lengths, so the comparison tells nothing of the token's length
        const expected = sha256Hex(Redacted.value(token))
        return Effect.flatMap(bearerSecret, (secret) =>
          Option.isSome(secret) && constantTimeEqual(sha256Hex(secret.value), expected)
            ? Effect.void
            : Effect.fail(new Unauthenticated()))
      },
      onNone: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          isLoopback(clientIp(request, config.trustProxy)) ? Effect.void : Effect.fail(new NotFound()))
    }))
)
