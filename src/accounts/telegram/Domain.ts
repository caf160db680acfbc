import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"

/** [D125]: `GET /v1/account/telegram` */
export const TelegramStatus = Schema.Struct({
  linked: Schema.Boolean,
  /** the Telegram `@username` (without `@`) of the linked account, if it has one */
  username: Schema.NullOr(Schema.String),
  linked_at: Schema.NullOr(Schema.Date)
}).annotations({ identifier: "TelegramStatus" })

/** [D125]: `POST /v1/account/telegram/link`: the one-time `t.me` link and when it stops working */
export const TelegramLinkUrl = Schema.Struct({
  url: Schema.String,
  expires_at: Schema.Date
}).annotations({ identifier: "TelegramLinkUrl" })

/**
 * `GET /v1/auth/telegram` (public): whether sign-in with Telegram is offered and the bot's id, the
 * `bot_id` of Telegram's login page (`https://oauth.telegram.org/auth?bot_id=...`). The id is the
 * public part of the bot token (before `:`); the secret part is never shown.
 */
export const TelegramSignInConfig = Schema.Struct({
  enabled: Schema.Boolean,
  bot_id: Schema.NullOr(Schema.Int)
}).annotations({ identifier: "TelegramSignInConfig" })

/** [D125]: what the webhook did with an update (`handled: false`: not a command the bot answers) */
export const TelegramUpdateResult = Schema.Struct({
  update_id: Schema.NullOr(Schema.Int),
  handled: Schema.Boolean
}).annotations({ identifier: "TelegramUpdateResult" })

/** Telegram is not configured ([D125]): its routes answer as an unknown route would. */
export class TelegramDisabled extends Schema.TaggedError<TelegramDisabled>()(
  "TelegramDisabled",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Resource not found." })
  },
  HttpApiSchema.annotations({ status: 404 })
) {}

/** A bad hash, stale data or a replay of sign-in with Telegram ([D125]). */
export class TelegramLoginInvalid extends Schema.TaggedError<TelegramLoginInvalid>()(
  "TelegramLoginInvalid",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Invalid Telegram login." })
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** Signed Telegram data of an account no user linked ([D125]). */
export class TelegramNotLinked extends Schema.TaggedError<TelegramNotLinked>()(
  "TelegramNotLinked",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Telegram account not linked." })
  },
  HttpApiSchema.annotations({ status: 401 })
) {}

/** [D125]: a link code is good for this long */
export const LINK_CODE_TTL_MS = 10 * 60_000
/** [D125]: signed data older than this does not sign in */
export const SIGN_IN_MAX_AGE_S = 600
/** an `auth_date` this far ahead of our clock is still taken (clock skew); further is refused */
export const SIGN_IN_FUTURE_SKEW_S = 60
