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

/** The scopes an API key may carry ([D98]); an access token has them all. */
export type KeyScope = "read" | "write" | "admin:read" | "admin:write"

/** Who a live bearer token belongs to: a session's access token or an API key ([D98]). */
export interface Principal {
  /** how the caller authenticated: an access token (a session, [D99]) or an API key */
  readonly kind: "token" | "api_key"
  /** the access token's id, or the API key's id (`kind` says which) */
  readonly tokenId: number
  readonly userId: number
  readonly role: "user" | "admin"
  /** two-factor sign-in is on for the user ([D97]) */
  readonly twoFactor: boolean
  /**
   * the login behind this credential passed the second factor ([D115]): a session's own login,
   * or for an API key the session that created it
   */
  readonly secondFactor: boolean
  /** an API key's scopes (unused for an access token, which may do all its owner may) */
  readonly scopes: ReadonlyArray<KeyScope>
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

/**
 * Bearer-token authentication of [D20]: 401 `Unauthenticated.` for anything but a live token or
 * API key; an API key outside its scopes is 403 `Forbidden.` ([D98]).
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(UnauthenticatedResponse, ForbiddenResponse),
  provides: CurrentUser,
  // named for the OpenAPI document, which adds the API key of [D98] beside it (http/OpenApiContract.ts)
  security: { userToken: HttpApiSecurity.bearer }
}) {}

/**
 * The authenticated caller, also kept in a FiberRef so that middleware running after
 * authentication (the per-user rate limits) can read it without a second lookup.
 */
export const currentPrincipal = FiberRef.unsafeMake<Option.Option<Principal>>(Option.none())

const BEARER = /^bearer +(\S.*)$/i

/** the secret of a request's `Bearer` header, if it has one */
const secretOf = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  const match = BEARER.exec(request.headers["authorization"] ?? "")
  return match ? Option.some(match[1]!.trim()) : Option.none<string>()
}

/** The `Bearer` scheme only, case-insensitively (the framework cuts 7 characters unchecked). */
export const bearerSecret = Effect.map(HttpServerRequest.HttpServerRequest, secretOf)

/** Routes under `/v1/admin` ([D70]): a live token (401) of an admin (403 `Forbidden.`). */
export class AdminAuthentication extends HttpApiMiddleware.Tag<AdminAuthentication>()("AdminAuthentication", {
  failure: Schema.Union(UnauthenticatedResponse, ForbiddenResponse),
  provides: CurrentUser,
  // named for the OpenAPI document, which adds the API key of [D98] beside it (http/OpenApiContract.ts)
  security: { userToken: HttpApiSecurity.bearer }
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
    const secret = secretOf(request)
    if (Option.isNone(secret)) {
      const nobody = Option.none<Principal>()
      verified.set(key, nobody)
      return Effect.succeed(nobody)
    }
    // issue 27: one step for the answer's memo, not a tap with its own effect
    return Effect.map(tokens.verify(secret.value), (principal) => {
      verified.set(key, principal)
      return principal
    })
  })

/**
 * What an API key needs for this request ([D98]): `read` for a GET (or HEAD), `write` for any
 * other method; on admin routes `admin:read` and `admin:write`.
 */
const scopeNeeded = (method: string, area: "user" | "admin"): KeyScope => {
  const reads = method === "GET" || method === "HEAD"
  return area === "admin" ? (reads ? "admin:read" : "admin:write") : (reads ? "read" : "write")
}

// issue 27: a chain of steps on the hot path, not a generator
const authenticate = (tokens: BearerTokens["Type"], area: "user" | "admin") =>
  Effect.flatMap(requestPrincipal(tokens), (principal): Effect.Effect<Principal, Unauthenticated | Forbidden, HttpServerRequest.HttpServerRequest> => {
    if (Option.isNone(principal)) return Effect.fail(new Unauthenticated())
    const user = principal.value
    const kept = FiberRef.set(currentPrincipal, principal)
    if (user.kind !== "api_key") return Effect.as(kept, user)
    return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.zipRight(kept, user.scopes.includes(scopeNeeded(request.method, area)) ? Effect.succeed(user) : Effect.fail(new Forbidden())))
  })

/**
 * Routes only a person may use, never an API key ([D98]): signing out, the password, two-factor
 * sign-in, API keys and sessions, deleting the account. 403 `Forbidden.` for a key.
 */
export class PeopleOnly extends HttpApiMiddleware.Tag<PeopleOnly>()("PeopleOnly", {
  failure: ForbiddenResponse,
  // a marker for the OpenAPI document: these routes take a user's token, never an API key
  security: { peopleOnly: HttpApiSecurity.bearer }
}) {}

export const PeopleOnlyLive = Layer.effect(
  PeopleOnly,
  Effect.map(BearerTokens, (tokens) =>
    PeopleOnly.of({
      // the principal of this request, verified once whichever middleware asks first
      peopleOnly: () =>
        Effect.flatMap(requestPrincipal(tokens), (principal) =>
          Option.isSome(principal) && principal.value.kind === "api_key" ? Effect.fail(new Forbidden()) : Effect.void)
    }))
)

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(BearerTokens, (tokens) => Authentication.of({ userToken: () => authenticate(tokens, "user") }))
)

export const TWO_FACTOR_REQUIRED = "Two-factor authentication required."

/**
 * An admin's token (403 `Forbidden.` for anyone else); with `ADMIN_REQUIRE_2FA` also an admin
 * who has two-factor sign-in on and a credential whose login passed it (403 `Two-factor
 * authentication required.`, [D97], [D115]): enrolling in a password-only session is not enough.
 */
export const AdminAuthenticationLive = Layer.effect(
  AdminAuthentication,
  Effect.gen(function*() {
    const tokens = yield* BearerTokens
    const config = yield* AppConfig
    return AdminAuthentication.of({
      userToken: () =>
        authenticate(tokens, "admin").pipe(
          Effect.filterOrFail((user) => user.role === "admin", () => new Forbidden()),
          Effect.filterOrFail(
            (user) => !config.adminRequire2fa || (user.twoFactor && user.secondFactor),
            () => new Forbidden({ message: TWO_FACTOR_REQUIRED })
          )
        )
    })
  })
)
