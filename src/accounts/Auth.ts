import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BearerTokens } from "../http/Auth.ts"
import { AppKey } from "../platform/Crypto.ts"
import { ApiKeys } from "./ApiKeys.ts"
import { Tokens } from "./Tokens.ts"

/**
 * What bearer authentication checks ([D20], [D98]): an API key (`vpk_...`) or else an access
 * token of the accounts room; and the CSRF value of a cookie session ([D119]), an HMAC of its
 * access token under the application key (nothing stored, bound to that one session).
 */
export const BearerTokensLive = Layer.effect(
  BearerTokens,
  Effect.gen(function* () {
    const tokens = yield* Tokens
    const keys = yield* ApiKeys
    const appKey = yield* AppKey
    return BearerTokens.of({
      verify: (secret) => (secret.startsWith("vpk_") ? keys.verify(secret) : tokens.verify(secret)),
      csrfOf: (token) => appKey.sign(`vpn_csrf:${token}`)
    })
  })
)
