import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BearerTokens } from "../http/Auth.ts"
import { ApiKeys } from "./ApiKeys.ts"
import { Tokens } from "./Tokens.ts"

/**
 * What bearer authentication checks ([D20], [D98]): an API key (`vpk_...`) or else an access
 * token of the accounts room.
 */
export const BearerTokensLive = Layer.effect(
  BearerTokens,
  Effect.gen(function*() {
    const tokens = yield* Tokens
    const keys = yield* ApiKeys
    return BearerTokens.of({ verify: (secret) => secret.startsWith("vpk_") ? keys.verify(secret) : tokens.verify(secret) })
  })
)
