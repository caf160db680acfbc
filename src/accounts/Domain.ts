import * as Schema from "effect/Schema"

/** The entities of the accounts room, each one schema: the row it is read from and the answer it gives. */

export const Role = Schema.Literal("user", "admin")
export type Role = typeof Role.Type

/** A user as `GET /v1/user` and the admin routes render it ([D21]); the other answers pick from it. */
export const User = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  email: Schema.String,
  status: Schema.Int,
  role: Role,
  email_verified_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  /** two-factor sign-in is on ([D97]) */
  two_factor: Schema.Boolean
}).annotations({ identifier: "AccountsUser" })

/** The stored user: what is rendered plus the password hash, which never leaves the room. */
export const UserRecord = Schema.Struct({ ...User.fields, password_hash: Schema.String })
export type UserRecord = typeof UserRecord.Type

/** `data.user` of register and of the profile update. */
export const UserSummary = User.pick("id", "name", "email").annotations({ identifier: "AccountsUserSummary" })

/** `data.user` of login: the spec adds `status`. */
export const LoginUser = User.pick("id", "name", "email", "status").annotations({ identifier: "AccountsLoginUser" })

export const Profile = User.pick("id", "name", "email", "created_at").annotations({ identifier: "AccountsProfile" })

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
  email_notifications: Schema.Boolean
}).annotations({ identifier: "AccountsSettings" })
export type Settings = typeof Settings.Type

/** Who a live bearer token belongs to; `twoFactor`: two-factor sign-in is on ([D97]). */
export const Principal = Schema.Struct({ tokenId: Schema.Int, userId: Schema.Int, role: Role, twoFactor: Schema.Boolean })
export type Principal = typeof Principal.Type
