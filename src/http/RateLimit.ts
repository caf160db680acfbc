import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"
import { email } from "../platform/Fields.ts"
import * as Schema from "effect/Schema"
import { Metrics } from "../platform/Metrics.ts"
import { enforceRateLimit, RateLimiter } from "../platform/RateLimiter.ts"
import { currentPrincipal } from "./Auth.ts"
import {
  CreateTicketRateLimit,
  ForgotPasswordRateLimit,
  LoginRateLimit,
  PasswordCheckRateLimit,
  PromoValidateRateLimit,
  RegisterRateLimit,
  ResendVerificationRateLimit,
  ResetPasswordRateLimit,
  TicketReplyRateLimit,
  TwoFactorRateLimit,
  VerifyEmailRateLimit
} from "./Middleware.ts"
import { clientAddressWith } from "./ClientAddress.ts"

const validEmail = Schema.decodeUnknownOption(email())

/**
 * The e-mail of the body as validation reads it ([D30] rev. 2): the same decoded body, and only
 * a valid address, normalised as stored; anything else counts against the address alone.
 */
const bodyEmail = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* Effect.option(request.json)
  if (Option.isNone(body) || typeof body.value !== "object" || body.value === null || Array.isArray(body.value)) {
    return Option.none<string>()
  }
  return validEmail((body.value as Record<string, unknown>)["email"])
})

export const RateLimitsLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    const config = yield* AppConfig
    const metrics = yield* Metrics
    const address = clientAddressWith(config)

    /** per user where a token authenticated the caller, else per address */
    const callerKey = (name: string) =>
      Effect.gen(function* () {
        const principal = yield* FiberRef.get(currentPrincipal)
        return Option.isSome(principal) ? `${name}:user:${principal.value.userId}` : `${name}:ip:${yield* address}`
      })

    /** per address and per e-mail of the body: the tighter wins */
    const addressAndEmail = (name: string) =>
      Effect.gen(function* () {
        const ip = `${name}:ip:${yield* address}`
        const email = yield* bodyEmail
        return Option.isSome(email) ? [ip, `${name}:email:${email.value}`] : [ip]
      })

    /** the limit `name` allows `limit` requests a minute per key; a refusal is counted ([D102]) */
    const limit = (name: string, limit: number, keys: (name: string) => Effect.Effect<ReadonlyArray<string>, never, HttpServerRequest.HttpServerRequest>) =>
      Effect.flatMap(keys(name), (k) => enforceRateLimit(limit, k)).pipe(
        Effect.provideService(RateLimiter, limiter),
        Effect.tapErrorTag("TooManyAttempts", () => Effect.sync(() => metrics.rateLimitRefused(name)))
      )

    const one = (name: string) => Effect.map(callerKey(name), (k) => [k])
    const byAddress = (name: string) => Effect.map(address, (ip) => [`${name}:ip:${ip}`])

    return Layer.mergeAll(
      Layer.succeed(LoginRateLimit, limit("login", 5, addressAndEmail)),
      Layer.succeed(ForgotPasswordRateLimit, limit("forgot-password", 3, addressAndEmail)),
      Layer.succeed(ResendVerificationRateLimit, limit("resend-verification", 6, one)),
      Layer.succeed(CreateTicketRateLimit, limit("create-ticket", 10, one)),
      Layer.succeed(TicketReplyRateLimit, limit("ticket-reply", 10, one)),
      Layer.succeed(PromoValidateRateLimit, limit("promo-validate", 10, one)),
      Layer.succeed(TwoFactorRateLimit, limit("two-factor", 5, one)),
      // one counter for both routes: alternating them gives no more guesses
      Layer.succeed(PasswordCheckRateLimit, limit("password-check", 5, one)),
      Layer.succeed(RegisterRateLimit, limit("register", 10, byAddress)),
      Layer.succeed(ResetPasswordRateLimit, limit("reset-password", 6, byAddress)),
      Layer.succeed(VerifyEmailRateLimit, limit("verify-email", 6, byAddress))
    )
  })
)

// the limits' tags live in the contract (`Middleware.ts`, issue 34)
export {
  CreateTicketRateLimit,
  ForgotPasswordRateLimit,
  LoginRateLimit,
  PasswordCheckRateLimit,
  PromoValidateRateLimit,
  RegisterRateLimit,
  ResendVerificationRateLimit,
  ResetPasswordRateLimit,
  TicketReplyRateLimit,
  TwoFactorRateLimit,
  VerifyEmailRateLimit
}
