import * as Schema from "effect/Schema"

/**
 * The audit room's entities ([D100]): one row per admin write and per security event of
 * [D99]. Who acted (a user id, or none), through what (an access token, an API key, a password at
 * sign-in, nothing), what, on which resource, for whom (the user whose security it concerns),
 * when and from where. Never a body, a password, a token or a key.
 */

/** How the actor authenticated: a session's token, an API key, a password (sign-in), Telegram (sign-in, [D125]), or not at all. */
export const ActorKind = Schema.Literal("token", "api_key", "password", "none", "telegram")
export type ActorKind = typeof ActorKind.Type

/** What a room appends; the time, address and user agent are the audit room's to add. */
export interface AuditEntry {
  readonly action: string
  readonly actorId: number | null
  readonly actorKind: ActorKind
  /** `<kind>:<id>`, e.g. `user:5`, `api_key:3` */
  readonly resource: string | null
  /** the user whose security event this is (their activity list shows it), if any */
  readonly subjectId: number | null
}

/** The security events of [D99], as `action` of the log and `event` of the activity list. */
export const SecurityEvent = Schema.Literal(
  "sign_in",
  "sign_in_failed",
  "password_changed",
  "password_reset",
  "email_changed",
  "two_factor_enabled",
  "two_factor_disabled",
  "recovery_code_used",
  "api_key_created",
  "api_key_revoked",
  "session_revoked",
  "vpn_access_revoked",
  // [D125]: a Telegram account that can sign in as the user, linked or unlinked
  "telegram_linked",
  "telegram_unlinked"
)
export type SecurityEvent = typeof SecurityEvent.Type

/** A row of the log as `GET /v1/admin/audit` shows it. */
export const AuditRecord = Schema.Struct({
  id: Schema.Int,
  created_at: Schema.Date,
  actor_id: Schema.NullOr(Schema.Int),
  actor_kind: ActorKind,
  action: Schema.String,
  resource: Schema.NullOr(Schema.String),
  subject_id: Schema.NullOr(Schema.Int),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AuditRecord" })
export type AuditRecord = typeof AuditRecord.Type

/** One of the caller's security events as `GET /v1/account/activity` shows it. */
export const ActivityEvent = Schema.Struct({
  id: Schema.Int,
  event: Schema.String,
  created_at: Schema.Date,
  via: ActorKind,
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AuditActivityEvent" })
export type ActivityEvent = typeof ActivityEvent.Type

/** The filters of `GET /v1/admin/audit`. */
export interface AuditFilters {
  readonly actor?: number | undefined
  readonly action?: string | undefined
  readonly resource?: string | undefined
  readonly from?: Date | undefined
  readonly to?: Date | undefined
}
