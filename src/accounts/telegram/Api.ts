import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type * as Context from "effect/Context"
import { Authentication, LoginRateLimit, PeopleOnly } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Confirmation, Ok } from "../../http/Envelope.ts"
import { errorEnvelope, InvalidSignatureResponse, ServiceUnavailableResponse } from "../../http/Errors.ts"
import { Body, label, string } from "../../platform/Fields.ts"
import { SESSION_HEADER_PARAMETER } from "../Api.ts"
import { LoginUser, SessionUser } from "../Domain.ts"
import { AccountDisabled } from "../Errors.ts"
import {
  TelegramDisabled,
  TelegramLinkUrl,
  TelegramLoginInvalid,
  TelegramNotLinked,
  TelegramSignInConfig,
  TelegramStatus,
  TelegramUpdateResult
} from "./Domain.ts"

/** A whole number as Telegram sends it (JSON number, or its digits as text), kept as the text the hash covers. */
const telegramInteger = (field: string) =>
  Schema.transformOrFail(Schema.Unknown, Schema.String, {
    strict: true,
    decode: (input, _, ast) =>
      typeof input === "number" && Number.isSafeInteger(input) && input >= 0
        ? ParseResult.succeed(String(input))
        : typeof input === "string" && /^[0-9]{1,20}$/.test(input)
          ? ParseResult.succeed(input)
          : ParseResult.fail(new ParseResult.Type(ast, input, `The ${label(field)} field must be an integer.`)),
    encode: ParseResult.succeed
  }).annotations({ jsonSchema: { type: "integer", minimum: 0 } })

/** one of the widget's text fields: absent, or null, is left out of the data-check-string */
const widgetText = (field: string) => Schema.optional(Schema.NullOr(string(field, { min: 0, max: 1024 })))

const secondFactor = {
  otp: Schema.optional(string("otp", { min: 0 })),
  recovery_code: Schema.optional(string("recovery_code", { min: 0 }))
}

/** [D125]: the Login Widget's fields as it hands them over, and the second factor beside them ([D97]) */
export const TelegramWidgetPayload = Body({
  id: telegramInteger("id"),
  first_name: widgetText("first_name"),
  last_name: widgetText("last_name"),
  username: widgetText("username"),
  photo_url: widgetText("photo_url"),
  auth_date: telegramInteger("auth_date"),
  hash: string("hash", { max: 128 }),
  ...secondFactor
})

export const TelegramWebAppPayload = Body({
  init_data: string("init_data", { max: 8192 }),
  ...secondFactor
})

const DisabledResponse = errorEnvelope(TelegramDisabled)

/** a token, as login answers; or with `X-Session: cookie` the user only and the session cookies ([D119]) */
const SignedIn = Ok(Schema.Union(Schema.Struct({ token: Schema.String, user: LoginUser }), Schema.Struct({ user: SessionUser })), {
  identifier: "TelegramSignedIn"
})

/** a sign-in with Telegram: its payload, answered and failing like a login, limited like one */
const signInEndpoint = <Name extends string, P extends Schema.Schema.AnyNoContext>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, "POST">,
  doc: Context.Context<never>,
  payload: P
) =>
  endpoint
    .annotateContext(doc)
    .setPayload(payload)
    .annotate(OpenApi.Override, { parameters: [SESSION_HEADER_PARAMETER] })
    .addSuccess(SignedIn)
    .addError(errorEnvelope(TelegramLoginInvalid))
    .addError(errorEnvelope(TelegramNotLinked))
    .addError(errorEnvelope(AccountDisabled))
    .addError(DisabledResponse)
    .middleware(LoginRateLimit)

/** Telegram ([D125]): the caller's link, the bot's webhook, sign-in with Telegram. */
export class TelegramApi extends HttpApiGroup.make("telegram")
  .annotate(OpenApi.Description, "Telegram: linking a chat for notices, the bot's webhook, and signing in with Telegram (the Login Widget or a Mini App).")
  .add(
    HttpApiEndpoint.post("createTelegramLink", "/account/telegram/link")
      .annotateContext(
        describe(
          "Create a Telegram link",
          "Answers a one-time `https://t.me/<bot>?start=<code>` link, valid 10 minutes (a new one replaces the earlier). Opening it and pressing Start links that Telegram chat to the account; the bot says so in the chat. A chat linked to another account stays with it. Takes a user's token only; 404 while Telegram is not configured."
        )
      )
      .addSuccess(Ok(TelegramLinkUrl, { identifier: "TelegramLinkCreated", status: 201 }))
      .addError(ServiceUnavailableResponse)
      .addError(DisabledResponse)
      .middleware(PeopleOnly)
  )
  .add(
    HttpApiEndpoint.get("telegramStatus", "/account/telegram")
      .annotateContext(describe("Get the Telegram link", "Whether a Telegram chat is linked, its `@username` (without `@`) and when it was linked."))
      .addSuccess(Ok(TelegramStatus, { identifier: "TelegramStatusResponse" }))
  )
  .add(
    HttpApiEndpoint.del("unlinkTelegram", "/account/telegram")
      .annotateContext(
        describe(
          "Unlink Telegram",
          "The linked chat gets no more notices and its Telegram account no longer signs in. Answers 200 whether or not a chat was linked."
        )
      )
      .addSuccess(Confirmation("TelegramUnlinked"))
  )
  .middlewareEndpoints(Authentication)
  .add(
    // the secret token is checked over the raw request before the body is read
    HttpApiEndpoint.post("telegramWebhook", "/webhooks/telegram")
      .annotateContext(
        describe(
          "Receive a Telegram update",
          "Called by the Bot API with `X-Telegram-Bot-Api-Secret-Token` (the `secret_token` of `setWebhook`, compared in constant time; else 401 and nothing changes). `/start <code>` in a private chat links it; the bot answers in the chat. Other updates are answered 200 with `handled: false`."
        )
      )
      .addSuccess(Ok(TelegramUpdateResult, { identifier: "TelegramUpdateAccepted" }))
      .addError(InvalidSignatureResponse)
      .addError(DisabledResponse)
  )
  .add(
    HttpApiEndpoint.get("telegramSignInConfig", "/auth/telegram")
      .annotateContext(
        describe(
          "Is sign-in with Telegram offered?",
          "Public: `enabled` is true when Telegram is configured, and `bot_id` is the bot's id (the part of the bot token before `:`, public in every Telegram login page) for Telegram's login page `https://oauth.telegram.org/auth?bot_id=<bot_id>&origin=<portal origin>&return_to=<portal URL>`, which returns to `return_to` with `#tgAuthResult=<base64url JSON of the widget's fields>`. Always 200: `{enabled: false, bot_id: null}` without Telegram."
        )
      )
      .addSuccess(Ok(TelegramSignInConfig, { identifier: "TelegramSignInConfigResponse" }))
  )
  .add(
    signInEndpoint(
      HttpApiEndpoint.post("telegramSignIn", "/auth/telegram"),
      describe(
        "Sign in with Telegram (Login Widget)",
        "The widget's fields (`id`, `first_name`, `last_name`, `username`, `photo_url`, `auth_date`, `hash`) as it hands them over; answers like login for the user whose linked Telegram account it is. The hash is checked as Telegram documents it, `auth_date` must be under 10 minutes old, and one set of fields signs in once: else 401 `Invalid Telegram login.`. An account no user linked: 401 `Telegram account not linked.`. With two-factor sign-in on, `otp` (or `recovery_code`) too. Limited like logins. With the header `X-Session: cookie` it answers `{user}` without a token and sets the session cookies instead, as `POST /v1/auth/session` does ([D119])."
      ),
      TelegramWidgetPayload
    )
  )
  .add(
    signInEndpoint(
      HttpApiEndpoint.post("telegramWebAppSignIn", "/auth/telegram/webapp"),
      describe(
        "Sign in with Telegram (Mini App)",
        "`init_data`: `Telegram.WebApp.initData` as the Mini App received it; checked with the `WebAppData` key derivation Telegram documents, under 10 minutes old, once. Answers and fails like the Login Widget's sign-in, `X-Session: cookie` included."
      ),
      TelegramWebAppPayload
    )
  ) {}
