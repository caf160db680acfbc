import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppConfig } from "../platform/Config.ts"
import { Forbidden, ForbiddenResponse, Unauthenticated, UnauthenticatedResponse } from "./Errors.ts"

/** Who a live bearer token belongs to. */
export interface Principal {
  readonly tokenId: number
  readonly userId: number
  readonly role: "user" | "admin"
  /** two-factor sign-in is on for the user ([D97]) */
  readonly twoFactor: boolean
}

/**
 * What authentication needs of the accounts room: the principal of a bearer token, if it is
 * live. The accounts room provides it (`src/accounts/Auth.ts`); HTTP knows no room.
 */
export class BearerTokens extends Context.Tag("BearerTokens")<BearerTokens, {
  readonly verify: (token: string) => Effect.Effect<Option.Option<Principal>>
}>() {}

/** The caller of a route behind `Authentication`. */
export class CurrentUser extends Context.Tag("CurrentUser")<CurrentUser, Principal>() {}

/** Bearer-token authentication of [D20]: 401 `Unauthenticated.` for anything but a live token. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: UnauthenticatedResponse,
  provides: CurrentUser,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/**
 * The authenticated caller, also kept in a FiberRef so that middleware running after
 * authentication (the per-user rate limits) can read it without a second lookup.
 */
export const currentPrincipal = FiberRef.unsafeMake<Option.Option<Principal>>(Option.none())

/** The `Bearer` scheme only, case-insensitively (the framework cuts 7 characters unchecked). */
export const bearerSecret = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const header = request.headers["authorization"] ?? ""
  const match = /^bearer +(\S.*)$/i.exec(header)
  return match ? Option.some(match[1]!.trim()) : Option.none<string>()
})

/** Routes under `/v1/admin` ([D70]): a live token (401) of an admin (403 `Forbidden.`). */
export class AdminAuthentication extends HttpApiMiddleware.Tag<AdminAuthentication>()("AdminAuthentication", {
  failure: Schema.Union(UnauthenticatedResponse, ForbiddenResponse),
  provides: CurrentUser,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** requests whose bearer token was verified already (by the general limit), by the runtime's request */
const verified = new WeakMap<object, Option.Option<Principal>>()

/**
 * The caller of this request's bearer token, if it is live; verified once a request: the general
 * limit ([D30], per user) and `Authentication` share the answer, so it costs one query.
 */
export const requestPrincipal = (tokens: BearerTokens["Type"]) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    // the runtime's own request: the same object whichever middleware asks
    const key: object = typeof request.source === "object" && request.source !== null ? request.source : request
    const known = verified.get(key)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.flatMap(bearerSecret, (secret) =>
      Option.isNone(secret) ? Effect.succeed(Option.none<Principal>()) : tokens.verify(secret.value)).pipe(
        Effect.tap((principal) => Effect.sync(() => verified.set(key, principal)))
      )
  })

const authenticate = (tokens: BearerTokens["Type"]) =>
  Effect.gen(function*() {
    const principal = yield* requestPrincipal(tokens)
    if (Option.isNone(principal)) return yield* Effect.fail(new Unauthenticated())
    yield* FiberRef.set(currentPrincipal, principal)
    return principal.value
  })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(BearerTokens, (tokens) => Authentication.of({ bearer: () => authenticate(tokens) }))
)

export const TWO_FACTOR_REQUIRED = "Two-factor authentication required."

/**
 * An admin's token (403 `Forbidden.` for anyone else); with `ADMIN_REQUIRE_2FA` also an admin
 * who has two-factor sign-in on (403 `Two-factor authentication required.`, [D97]).
 */
export const AdminAuthenticationLive = Layer.effect(
  AdminAuthentication,
  Effect.gen(function*() {
    const tokens = yield* BearerTokens
    const config = yield* AppConfig
    return AdminAuthentication.of({
      bearer: () =>
        authenticate(tokens).pipe(
          Effect.filterOrFail((user) => user.role === "admin", () => new Forbidden()),
          Effect.filterOrFail(
            (user) => !config.adminRequire2fa || user.twoFactor,
            () => new Forbidden({ message: TWO_FACTOR_REQUIRED })
          )
        )
    })
  })
)
