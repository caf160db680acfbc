import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../Api.ts"
import { BearerTokens, CurrentUser } from "../http/Auth.ts"
import { sessionCookies } from "../http/SessionCookies.ts"
import { AppConfig } from "../platform/Config.ts"
import { negotiateLocale } from "../platform/i18n/Locale.ts"
import { Accounts } from "./Accounts.ts"
import { SESSION_HEADER } from "./Api.ts"
import { ApiKeys } from "./ApiKeys.ts"
import { TwoFactor } from "./TwoFactor.ts"
import { PagesLive } from "./Pages.ts"
import { noStore } from "../http/Caching.ts"
import { UserId } from "../platform/Ids.ts"

/** Responses that carry a token or a secret are never cached ([D11]). */
const AccountsGroupLive = HttpApiBuilder.group(Api, "accounts", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    const twoFactor = yield* TwoFactor
    const apiKeys = yield* ApiKeys
    const cookies = sessionCookies(yield* AppConfig, (yield* BearerTokens).csrfOf)
    /** [D119]: the session goes into the cookies, and the body keeps only the user */
    const inCookies = <U>(signedIn: { readonly token: string; readonly user: U }) => Effect.as(cookies.set(signedIn.token), { user: signedIn.user })
    return handlers
      .handle("register", ({ payload, request }) =>
        // [D120]: the language of the account, the best of ours the browser accepts
        accounts
          .register(payload, negotiateLocale(request.headers["accept-language"]))
          .pipe(
            Effect.flatMap((registered) =>
              request.headers[SESSION_HEADER]?.trim().toLowerCase() === "cookie" ? inCookies(registered) : Effect.as(noStore, registered)
            )
          )
      )
      .handle("login", ({ payload }) => accounts.login(payload).pipe(Effect.tap(noStore)))
      .handle("createSession", ({ payload }) => Effect.flatMap(accounts.login(payload), inCookies))
      .handle("currentSession", () => Effect.map(Effect.flatMap(CurrentUser, accounts.user), (user) => ({ user })))
      .handle("logout", () => Effect.flatMap(CurrentUser, accounts.logout).pipe(Effect.zipRight(cookies.clear), Effect.as("Successfully logged out.")))
      .handle("logoutAll", () => Effect.flatMap(CurrentUser, accounts.logoutAll).pipe(Effect.as("Successfully logged out from all devices.")))
      .handle("forgotPassword", ({ payload }) =>
        accounts.forgotPassword(payload.email).pipe(Effect.as("If that email address is registered, a password reset link has been sent to it."))
      )
      .handle("resetPassword", ({ payload }) =>
        accounts.resetPassword(payload).pipe(Effect.as("Your password has been reset. Please log in with the new password."))
      )
      .handle("verifyEmail", ({ payload }) => accounts.verifyEmail(payload.token).pipe(Effect.as("Email verified.")))
      .handle("resendVerification", () =>
        Effect.flatMap(CurrentUser, accounts.resendVerification).pipe(
          Effect.map((outcome) => (outcome === "sent" ? "Verification link sent." : "Email already verified."))
        )
      )
      .handle("user", () => Effect.flatMap(CurrentUser, accounts.user))
      .handle("profile", () => Effect.flatMap(CurrentUser, accounts.user))
      .handle("updateProfile", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => accounts.updateProfile(caller, payload)).pipe(
          Effect.map((user) => ({ message: "Profile updated.", data: user }))
        )
      )
      .handle("changePassword", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => accounts.changePassword(caller, payload.current_password, payload.password)).pipe(
          Effect.as("Password updated.")
        )
      )
      .handle("settings", () => Effect.flatMap(CurrentUser, accounts.settings))
      .handle("updateSettings", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => accounts.updateSettings(caller, payload)).pipe(Effect.map((data) => ({ message: "Settings updated.", data })))
      )
      .handle("setUpTwoFactor", () => Effect.flatMap(CurrentUser, twoFactor.setUp).pipe(Effect.tap(noStore)))
      .handle("confirmTwoFactor", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => twoFactor.confirm(caller, payload.code)).pipe(
          Effect.map((data) => ({ message: "Two-factor authentication enabled.", data })),
          Effect.tap(noStore)
        )
      )
      .handle("disableTwoFactor", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => twoFactor.disable(caller, payload.password, payload.code)).pipe(
          Effect.as("Two-factor authentication disabled.")
        )
      )
      .handle("deleteAccount", ({ payload }) =>
        Effect.flatMap(CurrentUser, (caller) => accounts.deleteAccount(caller, payload.password)).pipe(Effect.as("Your account has been deleted."))
      )
      .handle("createApiKey", ({ payload }) => Effect.flatMap(CurrentUser, (caller) => apiKeys.create(caller, payload)).pipe(Effect.tap(noStore)))
      .handle("listApiKeys", () => Effect.flatMap(CurrentUser, apiKeys.list))
      .handle("revokeApiKey", ({ path }) => Effect.flatMap(CurrentUser, (caller) => apiKeys.revoke(caller, path.key)).pipe(Effect.as("API key revoked.")))
      .handle("listSessions", () => Effect.flatMap(CurrentUser, accounts.sessions))
      .handle("revokeSession", ({ path }) =>
        Effect.flatMap(CurrentUser, (caller) => accounts.revokeSession(caller, path.session)).pipe(Effect.as("Session revoked."))
      )
  })
)

const AccountsAdminGroupLive = HttpApiBuilder.group(Api, "accountsAdmin", (handlers) =>
  Effect.gen(function* () {
    const accounts = yield* Accounts
    return handlers
      .handle("listUsers", ({ urlParams }) => accounts.listUsers({ email: urlParams.email, page: urlParams.page ?? 1 }))
      .handle("updateUser", ({ path, payload }) => accounts.updateUser(UserId.make(path.user), payload))
  })
)

/** Every handler of the accounts room; its services come from `DomainLive`. */
export const AccountsHttpLive = Layer.mergeAll(AccountsGroupLive, AccountsAdminGroupLive, PagesLive)
