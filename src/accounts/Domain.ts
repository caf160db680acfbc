import * as Schema from "effect/Schema"
import { KeyScope } from "../platform/Principal.ts"
import { Locale } from "../platform/i18n/Locale.ts"
import { UserId } from "../platform/Ids.ts"

/** The entities of the accounts room, each one schema: the row it is read from and the answer it gives. */

export const Role = Schema.Literal("user", "admin")
export type Role = typeof Role.Type

/** A user as `GET /v1/user` and the admin routes render it ([D21]); the other answers pick from it. */
export const User = Schema.Struct({
  id: UserId,
  name: Schema.String,
  email: Schema.String,
  status: Schema.Int,
  role: Role,
  email_verified_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  /** two-factor sign-in is on ([D97]) */
  two_factor: Schema.Boolean
}).annotations({ identifier: "AccountsUser" })

/** The stored user: what is rendered plus the password hash, which never leaves the room, and the language. */
export const UserRecord = Schema.Struct({ ...User.fields, password_hash: Schema.String, locale: Locale })
export type UserRecord = typeof UserRecord.Type

/** `data.user` of register and of the profile update. */
export const UserSummary = User.pick("id", "name", "email").annotations({ identifier: "AccountsUserSummary" })

/** `data.user` of login: the spec adds `status`. */
export const LoginUser = User.pick("id", "name", "email", "status").annotations({ identifier: "AccountsLoginUser" })

export const Profile = UserRecord.pick("id", "name", "email", "created_at", "locale").annotations({ identifier: "AccountsProfile" })

/** `data.user` of the cookie-session routes ([D119]): the user as `GET /v1/user` shows it, and the language ([D120]) */
export const SessionUser = UserRecord.omit("password_hash").annotations({ identifier: "AccountsSessionUser" })

/**
 * Two-factor sign-in of one user as stored ([D97]): the secret in use and the one being set up,
 * both sealed with the application key; the last accepted time step; the recovery codes' hashes
 * (space-separated).
 */
export const TwoFactorState = Schema.Struct({
  secret: Schema.NullOr(Schema.String),
  pending: Schema.NullOr(Schema.String),
  last_step: Schema.NullOr(Schema.Int),
  recovery: Schema.String
})
export type TwoFactorState = typeof TwoFactorState.Type

/** What `POST /v1/account/2fa` answers: the new secret, for an authenticator app. */
export const TwoFactorSetup = Schema.Struct({
  secret: Schema.String,
  otpauth_url: Schema.String
}).annotations({ identifier: "AccountsTwoFactorSetup" })

/** What turning two-factor sign-in on answers: the recovery codes, shown this once. */
export const RecoveryCodes = Schema.Struct({
  recovery_codes: Schema.Array(Schema.String)
}).annotations({ identifier: "AccountsRecoveryCodes" })

export const Settings = Schema.Struct({
  email_notifications: Schema.Boolean,
  /** [D125]: notices also go to the linked Telegram chat; on once linked, until turned off */
  telegram_notifications: Schema.Boolean
}).annotations({ identifier: "AccountsSettings" })
export type Settings = typeof Settings.Type

/** What an API key may do ([D98]) and who a live bearer token belongs to: one definition, the contract's. */
export { KeyScope, type Principal } from "../platform/Principal.ts"
export const KEY_SCOPES: ReadonlyArray<KeyScope> = ["read", "write", "admin:read", "admin:write"]

/** An API key as listed ([D98]); its secret is never shown again. */
export const ApiKey = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  scopes: Schema.Array(KeyScope),
  created_at: Schema.Date,
  last_used_at: Schema.NullOr(Schema.Date),
  expires_at: Schema.NullOr(Schema.Date)
}).annotations({ identifier: "AccountsApiKey" })
export type ApiKey = typeof ApiKey.Type

/** A new API key: `key` (`vpk_<id>_<secret>`) is shown this once. */
export const NewApiKey = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  scopes: Schema.Array(KeyScope),
  expires_at: Schema.NullOr(Schema.Date),
  key: Schema.String
}).annotations({ identifier: "AccountsNewApiKey" })

/** A live access token of the caller ([D99]); `current`: the one this request came with. */
export const Session = Schema.Struct({
  id: Schema.Int,
  created_at: Schema.Date,
  last_used_at: Schema.Date,
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  current: Schema.Boolean
}).annotations({ identifier: "AccountsSession" })
export type Session = typeof Session.Type
