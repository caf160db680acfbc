import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BearerTokens } from "../http/Auth.ts"
import { Tokens } from "./Tokens.ts"

/** The accounts room's tokens are what bearer authentication checks ([D20]). */
export const BearerTokensLive = Layer.effect(BearerTokens, Effect.map(Tokens, (tokens) => BearerTokens.of({ verify: tokens.verify })))
