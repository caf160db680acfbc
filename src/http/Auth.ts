import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"
import { Forbidden, Unauthenticated } from "./Errors.ts"
import { AdminAuthentication, Authentication, CurrentUser, type KeyScope, PeopleOnly, type Principal } from "./Middleware.ts"

// the contract's side of authentication lives in `Middleware.ts` (issue 34: no server code in the contract)
export { AdminAuthentication, Authentication, CurrentUser, type KeyScope, PeopleOnly, type Principal }



/**
 * What authentication needs of the accounts room: the principal of a bearer token, if it is
 * live. The accounts room provides it (`src/accounts/Auth.ts`); HTTP knows no room.
 */
export class BearerTokens extends Context.Tag("BearerTokens")<BearerTokens, {
  readonly verify: (token: string) => Effect.Effect<Option.Option<Principal>>
}>() {}



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
