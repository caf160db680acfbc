import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { answers422WithoutInput } from "../http/OpenApiContract.ts"
import {
  AdminAuthentication,
  Authentication,
  ForgotPasswordRateLimit,
  LoginRateLimit,
  PasswordCheckRateLimit,
  PeopleOnly,
  RegisterRateLimit,
  ResendVerificationRateLimit,
  ResetPasswordRateLimit,
  TwoFactorRateLimit,
  VerifyEmailRateLimit
} from "../http/Middleware.ts"
import { Confirmation, Ok, OkMessage, OkPage } from "../http/Envelope.ts"
import { errorEnvelope, InvalidCredentialsResponse, TooManyAttemptsResponse } from "../http/Errors.ts"
import { Body, email, IdParam, oneOf, string } from "../platform/Fields.ts"
import { PageParam } from "../platform/Page.ts"
import { ApiKey, LoginUser, NewApiKey, Profile, RecoveryCodes, Session, Settings, TwoFactorSetup, User, UserSummary } from "./Domain.ts"
import { AccountDisabled } from "./Errors.ts"

// ---- payload fields ([D12], [D13]) --------------------------------------------------------------

import {
  ApiKeyPayload,
  ChangePasswordPayload,
  givenPassword,
  LoginPayload,
  newPassword,
  PASSWORD_MISMATCH,
  ProfilePayload,
  RegisterPayload,
  ResetPasswordPayload,
  SESSION_HEADER,
  SESSION_HEADER_PARAMETER,
  SessionData,
  SettingsPayload
} from "./Payloads.ts"

export {
  PASSWORD_MISMATCH,
  newPassword,
  RegisterPayload,
  LoginPayload,
  ResetPasswordPayload,
  ChangePasswordPayload,
  ProfilePayload,
  ApiKeyPayload,
  SESSION_HEADER,
  SESSION_HEADER_PARAMETER,
  SettingsPayload
}
// ---- the caller's account ([D20]-[D25]) ---------------------------------------------------------

export class AccountsApi extends HttpApiGroup.make("accounts")
  .annotate(OpenApi.Description, "Registration, sign-in, tokens, the profile, passwords, two-factor sign-in, API keys and sessions.")
  // with a token
  .add(
    HttpApiEndpoint.post("logout", "/auth/logout")
      .annotateContext(
        describe(
          "Sign out this token",
          "Revokes the access token sent with the request (or the cookie session's) and clears the `vpn_session` and `vpn_csrf` cookies (`Max-Age=0`); other sessions stay signed in. Takes a user's token only, never an API key."
        )
      )
      .addSuccess(Confirmation("AccountsLoggedOut"))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.post("logoutAll", "/auth/logout-all")
      .annotateContext(
        describe(
          "Sign out every session",
          "Revokes every access token of the caller, this one included. API keys stay valid: list and revoke them on their own. Takes a user's token only."
        )
      )
      .addSuccess(Confirmation("AccountsLoggedOutEverywhere"))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.post("resendVerification", "/auth/resend-verification")
      .annotateContext(
        describe(
          "Send the verification e-mail again",
          "E-mails a new verification link (older links stop working). For an already verified address: 200 `Email already verified.` and no e-mail. Rate limited per address."
        )
      )
      .addSuccess(Confirmation("AccountsVerificationSent"))
      .middleware(ResendVerificationRateLimit)
  )
  .add(
    HttpApiEndpoint.get("currentSession", "/auth/session")
      .annotateContext(
        describe(
          "Get the signed-in user of this session",
          "The caller's account (as `GET /v1/user` shows it) under `data.user`, for a browser signed in with the session cookie (or any credential); 401 when signed out."
        )
      )
      .addSuccess(Ok(SessionData, { identifier: "AccountsCurrentSession" }))
  )
  .add(
    HttpApiEndpoint.get("user", "/user")
      .annotateContext(
        describe(
          "Get the signed-in user",
          "The caller's account: id, name, e-mail, status (1 active, 0 disabled), role (`user` or `admin`), `email_verified_at` and `created_at`."
        )
      )
      .addSuccess(Ok(User, { identifier: "AccountsUserResponse" }))
  )
  .add(
    HttpApiEndpoint.get("profile", "/account/profile")
      .annotateContext(describe("Get the profile", "The caller's name and e-mail as shown on the profile page."))
      .addSuccess(Ok(Profile, { identifier: "AccountsProfileResponse" }))
  )
  .add(
    HttpApiEndpoint.put("updateProfile", "/account/profile")
      .annotateContext(
        describe(
          "Update name or e-mail",
          "Changes the fields present. A new e-mail clears `email_verified_at`, sends a verification link to it and a notice to the old address; a taken e-mail is 422. An API key may change the name (`write`) but never the e-mail (403). E-mail changes are limited (429)."
        )
      )
      .setPayload(ProfilePayload)
      .addSuccess(OkMessage(UserSummary, { identifier: "AccountsProfileUpdated" }))
      // e-mail changes: 3 an hour per user, 3 a day to any one new address ([D117])
      .addError(TooManyAttemptsResponse)
  )
  .add(
    HttpApiEndpoint.put("changePassword", "/account/password")
      .annotateContext(
        describe(
          "Change the password",
          "Checks `current_password` (422 `The password is incorrect.`), sets the new one and revokes every other access token and every API key. Password checks are limited like logins (429). Takes a user's token only."
        )
      )
      .setPayload(ChangePasswordPayload)
      .addSuccess(Confirmation("AccountsPasswordChanged"))
      .middleware(PeopleOnly)
      .middleware(PasswordCheckRateLimit)
  )
  .add(
    HttpApiEndpoint.get("settings", "/account/settings")
      .annotateContext(describe("Get notification settings", "The caller's settings, such as which e-mails they receive."))
      .addSuccess(Ok(Settings, { identifier: "AccountsSettingsResponse" }))
  )
  .add(
    HttpApiEndpoint.put("updateSettings", "/account/settings")
      .annotateContext(
        describe(
          "Update notification settings",
          "Changes the settings present (`email_notifications`, `telegram_notifications`; at least one) and answers them (message `Settings updated.`)."
        )
      )
      .setPayload(SettingsPayload)
      .addSuccess(OkMessage(Settings, { identifier: "AccountsSettingsUpdated" }))
  )
  .add(
    HttpApiEndpoint.post("setUpTwoFactor", "/account/2fa")
      .annotateContext(
        describe(
          "Start two-factor sign-in",
          "Creates a new TOTP secret (SHA-1, 6 digits, 30 s) and answers it in base32 with an `otpauth://` URL for authenticator apps; two-factor sign-in is on only after `POST /v1/account/2fa/confirm`. While it is on already: 422 `Two-factor authentication is already enabled.` (under `errors.two_factor`). Takes a user's token only."
        )
      )
      .addSuccess(Ok(TwoFactorSetup))
      .middleware(PeopleOnly)
      .annotate(OpenApi.Override, answers422WithoutInput)
  )
  .add(
    HttpApiEndpoint.post("confirmTwoFactor", "/account/2fa/confirm")
      .annotateContext(
        describe(
          "Confirm two-factor sign-in",
          "Checks a code of the new secret, turns two-factor sign-in on and answers 10 single-use recovery codes (shown once). The confirming code cannot be used again to sign in."
        )
      )
      .setPayload(Body({ code: string("code", { max: 64 }) }))
      .addSuccess(OkMessage(RecoveryCodes, { identifier: "AccountsTwoFactorEnabled" }))
      .middleware(PeopleOnly)
      .middleware(TwoFactorRateLimit)
  )
  .add(
    HttpApiEndpoint.del("disableTwoFactor", "/account/2fa")
      .annotateContext(
        describe("Turn two-factor sign-in off", "Needs the password and a current code; afterwards logins need the password only. Takes a user's token only.")
      )
      .setPayload(Body({ password: givenPassword(), code: string("code", { max: 64 }) }))
      .addSuccess(Confirmation("AccountsTwoFactorDisabled"))
      .middleware(PeopleOnly)
      .middleware(TwoFactorRateLimit)
  )
  .add(
    HttpApiEndpoint.del("deleteAccount", "/account")
      .annotateContext(
        describe(
          "Delete the account",
          "Checks the password (422 if wrong; limited like logins), then deletes the account with its sessions, devices, services and tickets in one step; invoices are kept for accounting. The e-mail is free again at once. Takes a user's token only."
        )
      )
      .setPayload(Body({ password: givenPassword() }))
      .addSuccess(Confirmation("AccountsDeleted"))
      .middleware(PeopleOnly)
      .middleware(PasswordCheckRateLimit)
  )
  // API keys ([D98]) and sessions ([D99]): a person's, never a key's
  .add(
    HttpApiEndpoint.post("createApiKey", "/account/api-keys")
      .annotateContext(
        describe(
          "Create an API key",
          "Answers the new key `vpk_<id>_<secret>` once, with its scopes (`read`, `write`, and for admins `admin:read`, `admin:write`) and optional expiry. Takes a user's token only."
        )
      )
      .setPayload(ApiKeyPayload)
      .addSuccess(Ok(NewApiKey, { identifier: "AccountsApiKeyCreated", status: 201 }))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.get("listApiKeys", "/account/api-keys")
      .annotateContext(describe("List API keys", "The caller's live API keys with scopes, creation, last use and expiry; never the secret."))
      .addSuccess(Ok(Schema.Array(ApiKey), { identifier: "AccountsApiKeyList" }))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.del("revokeApiKey", "/account/api-keys/:key")
      .annotateContext(describe("Revoke an API key", "The key stops working at once on every instance. Another user's key is 404."))
      .setPath(Schema.Struct({ key: IdParam }))
      .addSuccess(Confirmation("AccountsApiKeyRevoked"))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.get("listSessions", "/account/sessions")
      .annotateContext(
        describe("List signed-in sessions", "The caller's live access tokens with creation, last use, address and user agent; `current` marks this one.")
      )
      .addSuccess(Ok(Schema.Array(Session), { identifier: "AccountsSessionList" }))
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.del("revokeSession", "/account/sessions/:session")
      .annotateContext(describe("Revoke a session", "Signs that session out at once. Another user's session is 404."))
      .setPath(Schema.Struct({ session: IdParam }))
      .addSuccess(Confirmation("AccountsSessionRevoked"))
      .middleware(PeopleOnly)
  )
  .middlewareEndpoints(Authentication)
  // public
  .add(
    HttpApiEndpoint.post("register", "/auth/register")
      .annotateContext(
        describe(
          "Create an account",
          "Creates a user, e-mails a verification link and answers an access token (201). `password_confirmation` must equal `password`; a taken e-mail is 422. Rate limited per address. With the header `X-Session: cookie` it answers `{user}` without a token and sets the session cookies instead, as `POST /v1/auth/session` does."
        )
      )
      .setPayload(RegisterPayload)
      // read by the handler, not declared with `setHeaders` (that would make every typed client send it)
      .annotate(OpenApi.Override, { parameters: [SESSION_HEADER_PARAMETER] })
      .addSuccess(
        Ok(Schema.Union(Schema.Struct({ token: Schema.String, user: UserSummary }), Schema.Struct({ user: UserSummary })), {
          identifier: "AccountsRegistered",
          status: 201
        })
      )
      .middleware(RegisterRateLimit)
  )
  .add(
    HttpApiEndpoint.post("login", "/auth/login")
      .annotateContext(
        describe(
          "Sign in",
          "Checks e-mail and password and answers a new access token. With two-factor sign-in on, send `otp` (or a `recovery_code`) too. Wrong credentials: 401; limited per address and per e-mail (429 with `Retry-After`)."
        )
      )
      .setPayload(LoginPayload)
      .addSuccess(Ok(Schema.Struct({ token: Schema.String, user: LoginUser }), { identifier: "AccountsLoggedIn" }))
      .addError(InvalidCredentialsResponse)
      .addError(errorEnvelope(AccountDisabled))
      .middleware(LoginRateLimit)
  )
  .add(
    HttpApiEndpoint.post("createSession", "/auth/session")
      .annotateContext(
        describe(
          "Sign in a browser (cookie session)",
          "Signs in exactly as `POST /v1/auth/login` (the same limits, counters, messages and second factor) but answers the user with no token: it sets the `vpn_session` cookie (the access token; `HttpOnly`, `SameSite=Strict`, `Path=/`, `Secure` when `APP_URL` is https, `Max-Age` of `TOKEN_TTL_DAYS`) and the `vpn_csrf` cookie (readable by scripts). The cookie then opens every route a bearer token opens; a request other than GET/HEAD must send `X-CSRF-Token` equal to `vpn_csrf` (else 403 `CSRF token mismatch.`). A `Bearer` header, when present, wins over the cookie."
        )
      )
      .setPayload(LoginPayload)
      .addSuccess(Ok(SessionData, { identifier: "AccountsSessionStarted" }))
      .addError(InvalidCredentialsResponse)
      .addError(errorEnvelope(AccountDisabled))
      .middleware(LoginRateLimit)
  )
  .add(
    HttpApiEndpoint.post("forgotPassword", "/auth/forgot-password")
      .annotateContext(
        describe(
          "Ask for a password reset link",
          "Always answers the same 200, whether or not the address is registered; a registered address gets a link valid 60 minutes. Rate limited per address and per e-mail."
        )
      )
      .setPayload(Body({ email: email() }))
      .addSuccess(Confirmation("AccountsResetLinkSent"))
      .middleware(ForgotPasswordRateLimit)
  )
  .add(
    HttpApiEndpoint.post("resetPassword", "/auth/reset-password")
      .annotateContext(
        describe(
          "Reset the password",
          "Sets a new password with the e-mailed token (single use) and revokes every access token and API key of the account. A bad or used token: 422 `errors.token`. Rate limited."
        )
      )
      .setPayload(ResetPasswordPayload)
      .addSuccess(Confirmation("AccountsPasswordReset"))
      .middleware(ResetPasswordRateLimit)
  )
  .add(
    HttpApiEndpoint.post("verifyEmail", "/auth/verify-email")
      .annotateContext(
        describe(
          "Verify the e-mail address",
          "Marks the address verified with the e-mailed token (200 `Email verified.`); a bad or used token is 422 `errors.token`. Rate limited."
        )
      )
      .setPayload(Body({ token: string("token", { max: 255 }) }))
      .addSuccess(Confirmation("AccountsEmailVerified"))
      .middleware(VerifyEmailRateLimit)
  ) {}

// ---- admin ([D70]) ----------------------------------------------------------------------------

export class AccountsAdminApi extends HttpApiGroup.make("accountsAdmin")
  .annotate(OpenApi.Description, "Users, for admins.")
  .add(
    HttpApiEndpoint.get("listUsers", "/admin/users")
      .annotateContext(describe("List users (admin)", "Every user, 15 a page, filtered by a case-insensitive part of the e-mail."))
      .setUrlParams(
        Schema.Struct({
          email: Schema.optional(Schema.String.annotations({ message: () => "The email field must be a string." })),
          page: Schema.optional(PageParam)
        })
      )
      .addSuccess(OkPage(User, "AccountsAdminUserPage"))
  )
  .add(
    HttpApiEndpoint.put("updateUser", "/admin/users/:user")
      .annotateContext(
        describe(
          "Enable, disable or change a user's role (admin)",
          "A disabled user (status 0) cannot sign in, their tokens stop working and their VPN access stops at once. The last active admin cannot be demoted or disabled (422)."
        )
      )
      .setPath(Schema.Struct({ user: IdParam }))
      .setPayload(
        Body({
          status: Schema.optional(
            Schema.Number.annotations({ message: () => "The selected status is invalid." }).pipe(
              Schema.filter((n) => n === 0 || n === 1, { message: () => "The selected status is invalid.", jsonSchema: { type: "integer", enum: [0, 1] } })
            )
          ),
          role: Schema.optional(oneOf("role", ["user", "admin"]))
        })
      )
      .addSuccess(Ok(User, { identifier: "AccountsAdminUserResponse" }))
  )
  .middlewareEndpoints(AdminAuthentication) {}

// ---- HTML pages outside /v1 ([D26]) ---------------------------------------------------------------

const Html = HttpApiSchema.Text({ contentType: "text/html; charset=utf-8" })

export class AccountsPagesApi extends HttpApiGroup.make("accountsPages")
  .add(
    HttpApiEndpoint.get("verifyEmailPage", "/verify-email")
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String) }))
      .addSuccess(Html)
      // the same per-address counter as POST /v1/auth/verify-email ([D117])
      .middleware(VerifyEmailRateLimit)
  )
  .add(
    HttpApiEndpoint.get("resetPasswordPage", "/reset-password")
      .setUrlParams(Schema.Struct({ token: Schema.optional(Schema.String), email: Schema.optional(Schema.String) }))
      .addSuccess(Html)
      // [D117], made precise by issue 34: every request to the page counts, GET included
      .middleware(ResetPasswordRateLimit)
  )
  // the form of the reset page posts here (application/x-www-form-urlencoded), so it works without JavaScript
  // the same per-address counter as POST /v1/auth/reset-password ([D117])
  .add(HttpApiEndpoint.post("resetPasswordForm", "/reset-password").addSuccess(Html).middleware(ResetPasswordRateLimit))
  .annotate(OpenApi.Exclude, true) {}
