import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual } from "../platform/Crypto.ts"
import { Forbidden, Unauthenticated } from "./Errors.ts"

import { AdminAuthentication, Authentication, CurrentUser, type KeyScope, PeopleOnly, type Principal } from "./Middleware.ts"

// the contract's side of authentication lives in `Middleware.ts` (issue 34: no server code in the contract)
export { AdminAuthentication, Authentication, CurrentUser, type KeyScope, PeopleOnly, type Principal }

/**
 * What authentication needs of the accounts room: the principal of a bearer token, if it is
 * live. The accounts room provides it (`src/accounts/Auth.ts`); HTTP knows no room.
 */
export class BearerTokens extends Context.Tag("BearerTokens")<
  BearerTokens,
  {
    readonly verify: (token: string) => Effect.Effect<Option.Option<Principal>>
    /**
     * the `vpn_csrf` value of a cookie session ([D119]): derived from its access token under the
     * application key, so that only the csrf cookie issued with that session matches it
     */
    readonly csrfOf: (token: string) => string
  }
>() {}

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

/** The cookie session of [D119]: the access token (HttpOnly) and its double-submit CSRF value. */
export const SESSION_COOKIE = "vpn_session"
export const CSRF_COOKIE = "vpn_csrf"
export const CSRF_HEADER = "x-csrf-token"
export const CSRF_MISMATCH = "CSRF token mismatch."

/** the access token of a request's `vpn_session` cookie, if any (never an API key: a key is a bearer credential only) */
const cookieSecretOf = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  const value = request.headers["cookie"] === undefined ? undefined : request.cookies[SESSION_COOKIE]
  return value === undefined || value === "" || value.startsWith("vpk_") ? Option.none<string>() : Option.some(value)
}

/** the request carries a credential of a caller: a `Bearer` header or a session cookie */
export const hasCallerCredential = (request: HttpServerRequest.HttpServerRequest): boolean =>
  Option.isSome(secretOf(request)) || Option.isSome(cookieSecretOf(request))

/** The `Bearer` scheme only, case-insensitively (the framework cuts 7 characters unchecked). */
export const bearerSecret = Effect.map(HttpServerRequest.HttpServerRequest, secretOf)

/**
 * The caller of a request: the principal of its credential, if live, and whether a cookie session
 * refuses this request for its CSRF header ([D119]: a method other than GET/HEAD needs
 * `X-CSRF-Token` equal to the `vpn_csrf` issued with that session).
 */
interface Caller {
  readonly principal: Option.Option<Principal>
  readonly csrfRefused: boolean
}

const NOBODY: Caller = { principal: Option.none(), csrfRefused: false }

/** requests whose credential was verified already (by the general limit), by the runtime's request */
const verified = new WeakMap<object, Caller>()

const csrfRefused = (tokens: BearerTokens["Type"], request: HttpServerRequest.HttpServerRequest, token: string) => {
  if (request.method === "GET" || request.method === "HEAD") return false
  const sent = request.headers[CSRF_HEADER]
  return sent === undefined || !constantTimeEqual(sent, tokens.csrfOf(token))
}

/**
 * The caller of this request, verified once a request: the general limit ([D30], per user) and
 * `Authentication` share the answer, so it costs one query. A `Bearer` header wins over the
 * session cookie ([D119]); the cookie is read only without one.
 */
const requestCaller = (tokens: BearerTokens["Type"]) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    // the runtime's own request: the same object whichever middleware asks
    const key: object = typeof request.source === "object" && request.source !== null ? request.source : request
    const known = verified.get(key)
    if (known !== undefined) return Effect.succeed(known)
    const bearer = secretOf(request)
    const cookie = Option.isNone(bearer) ? cookieSecretOf(request) : Option.none<string>()
    const secret = Option.orElse(bearer, () => cookie)
    if (Option.isNone(secret)) {
      verified.set(key, NOBODY)
      return Effect.succeed(NOBODY)
    }
    // issue 27: one step for the answer's memo, not a tap with its own effect
    return Effect.map(tokens.verify(secret.value), (principal) => {
      const caller: Caller = {
        principal,
        csrfRefused: Option.isSome(cookie) && Option.isSome(principal) && csrfRefused(tokens, request, cookie.value)
      }
      verified.set(key, caller)
      return caller
    })
  })

/** The caller of this request's credential (bearer token, API key or session cookie), if it is live. */
export const requestPrincipal = (tokens: BearerTokens["Type"]) => Effect.map(requestCaller(tokens), (caller) => caller.principal)

/**
 * What an API key needs for this request ([D98]): `read` for a GET (or HEAD), `write` for any
 * other method; on admin routes `admin:read` and `admin:write`.
 */
const scopeNeeded = (method: string, area: "user" | "admin"): KeyScope => {
  const reads = method === "GET" || method === "HEAD"
  return area === "admin" ? (reads ? "admin:read" : "admin:write") : reads ? "read" : "write"
}

// issue 27: a chain of steps on the hot path, not a generator
const authenticate = (tokens: BearerTokens["Type"], area: "user" | "admin") =>
  Effect.flatMap(
    requestCaller(tokens),
    ({ csrfRefused, principal }): Effect.Effect<Principal, Unauthenticated | Forbidden, HttpServerRequest.HttpServerRequest> => {
      if (Option.isNone(principal)) return Effect.fail(new Unauthenticated())
      if (csrfRefused) return Effect.fail(new Forbidden({ message: CSRF_MISMATCH }))
      const user = principal.value
      const kept = FiberRef.set(currentPrincipal, principal)
      if (user.kind !== "api_key") return Effect.as(kept, user)
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.zipRight(kept, user.scopes.includes(scopeNeeded(request.method, area)) ? Effect.succeed(user) : Effect.fail(new Forbidden()))
      )
    }
  )

export const PeopleOnlyLive = Layer.effect(
  PeopleOnly,
  Effect.map(BearerTokens, (tokens) =>
    PeopleOnly.of({
      // the principal of this request, verified once whichever middleware asks first
      peopleOnly: () =>
        Effect.flatMap(requestPrincipal(tokens), (principal) =>
          Option.isSome(principal) && principal.value.kind === "api_key" ? Effect.fail(new Forbidden()) : Effect.void
        )
    })
  )
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
  Effect.gen(function* () {
    const tokens = yield* BearerTokens
    const config = yield* AppConfig
    return AdminAuthentication.of({
      userToken: () =>
        authenticate(tokens, "admin").pipe(
          Effect.filterOrFail(
            (user) => user.role === "admin",
            () => new Forbidden()
          ),
          Effect.filterOrFail(
            (user) => !config.adminRequire2fa || (user.twoFactor && user.secondFactor),
            () => new Forbidden({ message: TWO_FACTOR_REQUIRED })
          )
        )
    })
  })
)
