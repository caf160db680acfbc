import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { randomToken, sha256Hex } from "../platform/Crypto.ts"

export type MailTokenPurpose = "verify_email" | "reset_password"

export const VERIFY_TTL_MS = 24 * 60 * 60 * 1000
export const RESET_TTL_MS = 60 * 60 * 1000

const TOKEN_LENGTH = 64

/**
 * Single-use tokens sent by e-mail ([D22], [D23]): random, only a SHA-256 stored, expiring.
 * Using one is one atomic `update ... where used_at is null`, so two concurrent uses give one success.
 */
export class MailTokens extends Context.Tag("MailTokens")<MailTokens, {
  readonly issue: (userId: number, purpose: MailTokenPurpose, now: Date) => Effect.Effect<string>
  /** A reset token for the account of `email`, when there is one; the same single statement either way. */
  readonly issueResetFor: (email: string, now: Date) => Effect.Effect<Option.Option<{ readonly token: string; readonly userId: number }>>
  /** Marks the token used and returns its user, if it is live (and belongs to `email`, when given). */
  readonly consume: (token: string, purpose: MailTokenPurpose, now: Date, email?: string) => Effect.Effect<Option.Option<number>>
  /** Drops the user's unused tokens of this purpose (a newer one replaces them). */
  readonly invalidate: (userId: number, purpose: MailTokenPurpose) => Effect.Effect<void>
}>() {
  static readonly Live = Layer.effect(
    MailTokens,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const ttl = (purpose: MailTokenPurpose) => purpose === "verify_email" ? VERIFY_TTL_MS : RESET_TTL_MS
      return {
        issue: (userId, purpose, now) => {
          const token = randomToken(TOKEN_LENGTH)
          return sql`
            insert into mail_tokens (user_id, purpose, token_hash, expires_at, created_at)
            values (${userId}, ${purpose}, ${sha256Hex(token)}, ${new Date(now.getTime() + ttl(purpose))}, ${now})`.pipe(
            Effect.as(token),
            Effect.orDie
          )
        },
        issueResetFor: (email, now) => {
          const token = randomToken(TOKEN_LENGTH)
          return sql<{ user_id: number }>`
            insert into mail_tokens (user_id, purpose, token_hash, expires_at, created_at)
            select id, 'reset_password', ${sha256Hex(token)}, ${new Date(now.getTime() + RESET_TTL_MS)}, ${now}
            from users where lower(email) = ${email}
            returning user_id`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => ({ token, userId: row.user_id }))),
            Effect.orDie
          )
        },
        consume: (token, purpose, now, email) =>
          sql<{ user_id: number }>`
            update mail_tokens set used_at = ${now}
            where token_hash = ${sha256Hex(token)} and purpose = ${purpose}
              and used_at is null and expires_at > ${now}
              and (${email ?? null}::text is null
                   or user_id = (select id from users where lower(email) = ${email ?? null}::text))
            returning user_id`.pipe(
            Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => row.user_id)),
            Effect.orDie
          ),
        invalidate: (userId, purpose) =>
          sql`delete from mail_tokens where user_id = ${userId} and purpose = ${purpose} and used_at is null`.pipe(
            Effect.asVoid,
            Effect.orDie
          )
      }
    })
  )
}
