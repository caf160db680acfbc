import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { BearerTokens, CurrentUser } from "../../http/Auth.ts"
import { sessionCookies } from "../../http/SessionCookies.ts"
import { AppConfig } from "../../platform/Config.ts"
import { SESSION_HEADER } from "../Api.ts"
import type { UserRecord } from "../Domain.ts"
import type { WidgetField } from "./Signatures.ts"
import { TelegramAccounts } from "./Telegram.ts"
import { noStore } from "../../http/Caching.ts"

/** Responses that carry a token are never cached ([D11]). */
/** the widget's text fields: null is as absent */
const present = (value: string | null | undefined) => (value === null ? undefined : value)

export const TelegramHttpLive = HttpApiBuilder.group(Api, "telegram", (handlers) =>
  Effect.gen(function* () {
    const telegram = yield* TelegramAccounts
    const cookies = sessionCookies(yield* AppConfig, (yield* BearerTokens).csrfOf)
    /**
     * A sign-in's answer: the token, or with `X-Session: cookie` the session in the cookies and
     * the user only ([D119]: the portal never holds a token), as registration does.
     */
    const answer =
      (request: { readonly headers: Readonly<Record<string, string | undefined>> }) => (signedIn: { readonly token: string; readonly user: UserRecord }) =>
        request.headers[SESSION_HEADER]?.trim().toLowerCase() === "cookie"
          ? Effect.as(cookies.set(signedIn.token), { user: signedIn.user })
          : Effect.as(noStore, signedIn)
    return handlers
      .handle("telegramSignInConfig", () => Effect.succeed(telegram.signInConfig))
      .handle("createTelegramLink", () => Effect.flatMap(CurrentUser, telegram.createLink))
      .handle("telegramStatus", () => Effect.flatMap(CurrentUser, telegram.status))
      .handle("unlinkTelegram", () => Effect.flatMap(CurrentUser, telegram.unlink).pipe(Effect.as("Telegram unlinked.")))
      .handle("telegramWebhook", () =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = yield* Effect.orElseSucceed(request.text, () => "")
          return yield* telegram.webhook(raw, request.headers["x-telegram-bot-api-secret-token"])
        })
      )
      .handle("telegramSignIn", ({ payload, request }) => {
        const fields: Partial<Record<WidgetField, string>> = {}
        for (const [key, value] of Object.entries({
          id: payload.id,
          auth_date: payload.auth_date,
          first_name: present(payload.first_name),
          last_name: present(payload.last_name),
          username: present(payload.username),
          photo_url: present(payload.photo_url)
        }) as Array<[WidgetField, string | undefined]>)
          if (value !== undefined) fields[key] = value
        return telegram
          .signInWidget({ fields, hash: payload.hash, otp: payload.otp, recovery_code: payload.recovery_code })
          .pipe(Effect.flatMap(answer(request)))
      })
      .handle("telegramWebAppSignIn", ({ payload, request }) => telegram.signInWebApp(payload).pipe(Effect.flatMap(answer(request))))
  })
).pipe(Layer.provide(TelegramAccounts.Default))
