import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { ForbiddenResponse, NotFoundResponse, ServiceUnavailableResponse, TooManyAttemptsResponse, UnauthenticatedResponse } from "./Errors.ts"
import type { Principal } from "../platform/Principal.ts"

/*
 * The contract's middleware (issue 34): the tags the rooms' `Api.ts` attach to their endpoints,
 * with what each may fail with and provide. Their implementations (`Auth.ts`, `RateLimit.ts`,
 * `MetricsAccess.ts`) are the server's; the typed client and the OpenAPI document need only these.
 */

export { KeyScope, type Principal } from "../platform/Principal.ts"

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

/** Routes under `/v1/admin` ([D70]): a live token (401) of an admin (403 `Forbidden.`). */
export class AdminAuthentication extends HttpApiMiddleware.Tag<AdminAuthentication>()("AdminAuthentication", {
  failure: Schema.Union(UnauthenticatedResponse, ForbiddenResponse),
  provides: CurrentUser,
  // named for the OpenAPI document, which adds the API key of [D98] beside it (http/OpenApiContract.ts)
  security: { userToken: HttpApiSecurity.bearer }
}) {}

/**
 * Routes only a person may use, never an API key ([D98]): signing out, the password, two-factor
 * sign-in, API keys and sessions, deleting the account. 403 `Forbidden.` for a key.
 */
export class PeopleOnly extends HttpApiMiddleware.Tag<PeopleOnly>()("PeopleOnly", {
  failure: ForbiddenResponse,
  // a marker for the OpenAPI document: these routes take a user's token, never an API key
  security: { peopleOnly: HttpApiSecurity.bearer }
}) {}

/**
 * The spec's six limits ([D30]) and the three of its rev. 2 (register, reset-password, verify-email, per address), shared by every instance through PostgreSQL. Each is an
 * endpoint middleware, so it runs after authentication (401) and before the body is
 * decoded (422): `.middleware(LoginRateLimit)` on the endpoint, before
 * `.middlewareEndpoints(Authentication)` on the group.
 */
const failure = Schema.Union(TooManyAttemptsResponse, ServiceUnavailableResponse)

export class LoginRateLimit extends HttpApiMiddleware.Tag<LoginRateLimit>()("LoginRateLimit", { failure }) {}
export class ForgotPasswordRateLimit extends HttpApiMiddleware.Tag<ForgotPasswordRateLimit>()("ForgotPasswordRateLimit", { failure }) {}
export class ResendVerificationRateLimit extends HttpApiMiddleware.Tag<ResendVerificationRateLimit>()("ResendVerificationRateLimit", { failure }) {}
export class CreateTicketRateLimit extends HttpApiMiddleware.Tag<CreateTicketRateLimit>()("CreateTicketRateLimit", { failure }) {}
export class TicketReplyRateLimit extends HttpApiMiddleware.Tag<TicketReplyRateLimit>()("TicketReplyRateLimit", { failure }) {}
export class RegisterRateLimit extends HttpApiMiddleware.Tag<RegisterRateLimit>()("RegisterRateLimit", { failure }) {}
export class ResetPasswordRateLimit extends HttpApiMiddleware.Tag<ResetPasswordRateLimit>()("ResetPasswordRateLimit", { failure }) {}
export class VerifyEmailRateLimit extends HttpApiMiddleware.Tag<VerifyEmailRateLimit>()("VerifyEmailRateLimit", { failure }) {}
/** confirming or turning off two-factor sign-in ([D97]): codes are not guessed at the general rate */
export class TwoFactorRateLimit extends HttpApiMiddleware.Tag<TwoFactorRateLimit>()("TwoFactorRateLimit", { failure }) {}
/**
 * a password checked with a session (`DELETE /v1/account`, `PUT /v1/account/password`): the login
 * limit's rule, 5 a minute per user, counted before any hash ([D117])
 */
export class PasswordCheckRateLimit extends HttpApiMiddleware.Tag<PasswordCheckRateLimit>()("PasswordCheckRateLimit", { failure }) {}
export class PromoValidateRateLimit extends HttpApiMiddleware.Tag<PromoValidateRateLimit>()("PromoValidateRateLimit", { failure }) {}

/**
 * Who may read `GET /metrics` ([D102]): with `METRICS_TOKEN` set, a caller sending it as a bearer
 * token (anything else: 401 `Unauthenticated.`); without it, clients on this machine only, and
 * to anyone else the route does not exist (404). The address is the one `TRUST_PROXY` names.
 */
export class MetricsAccess extends HttpApiMiddleware.Tag<MetricsAccess>()("MetricsAccess", {
  failure: Schema.Union(UnauthenticatedResponse, NotFoundResponse)
}) {}
