import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomToken, sha256Hex } from "../platform/Crypto.ts"
import { UserId } from "../platform/Ids.ts"

const PURGE_BATCH = 1000

export const MailTokenPurpose = Schema.Literal("verify_email", "reset_password")
export type MailTokenPurpose = typeof MailTokenPurpose.Type

export const VERIFY_TTL_MS = 24 * 60 * 60 * 1000
export const RESET_TTL_MS = 60 * 60 * 1000

const TOKEN_LENGTH = 64

const ttl = (purpose: MailTokenPurpose) => (purpose === "verify_email" ? VERIFY_TTL_MS : RESET_TTL_MS)

/** A token as presented: its hash, what it is for, and (reset links) the e-mail it was sent to. */
const Presented = Schema.Struct({
  tokenHash: Schema.String,
  purpose: MailTokenPurpose,
  now: Schema.DateFromSelf,
  email: Schema.NullOr(Schema.String)
})
const OfUser = Schema.Struct({ user_id: UserId })

/**
 * Single-use tokens sent by e-mail ([D22], [D23]): random, only a SHA-256 stored, expiring.
 * Using one is one atomic `update ... where used_at is null`, so two concurrent uses give one success.
 */
export class MailTokens extends Effect.Service<MailTokens>()("accounts/MailTokens", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const insert = SqlSchema.void({
      Request: Schema.Struct({
        userId: Schema.Int,
        purpose: MailTokenPurpose,
        tokenHash: Schema.String,
        expiresAt: Schema.DateFromSelf,
        now: Schema.DateFromSelf
      }),
      execute: (t) => sql`
        insert into mail_tokens (user_id, purpose, token_hash, expires_at, created_at)
        values (${t.userId}, ${t.purpose}, ${t.tokenHash}, ${t.expiresAt}, ${t.now})`
    })
    const insertResetFor = SqlSchema.findOne({
      Request: Schema.Struct({ email: Schema.String, tokenHash: Schema.String, expiresAt: Schema.DateFromSelf, now: Schema.DateFromSelf }),
      Result: OfUser,
      execute: (t) => sql`
        insert into mail_tokens (user_id, purpose, token_hash, expires_at, created_at)
        select id, 'reset_password', ${t.tokenHash}, ${t.expiresAt}, ${t.now}
        from users where lower(email) = ${t.email}
        returning user_id`
    })
    const liveOwner = SqlSchema.findOne({
      Request: Presented,
      Result: OfUser,
      execute: (t) => sql`
        select user_id from mail_tokens
        where token_hash = ${t.tokenHash} and purpose = ${t.purpose}
          and used_at is null and expires_at > ${t.now}
          and (${t.email}::text is null or user_id = (select id from users where lower(email) = ${t.email}::text))`
    })
    const use = SqlSchema.findOne({
      Request: Presented,
      Result: OfUser,
      execute: (t) => sql`
        update mail_tokens set used_at = ${t.now}
        where token_hash = ${t.tokenHash} and purpose = ${t.purpose}
          and used_at is null and expires_at > ${t.now}
          and (${t.email}::text is null or user_id = (select id from users where lower(email) = ${t.email}::text))
        returning user_id`
    })
    const dropUnused = SqlSchema.void({
      Request: Schema.Struct({ userId: Schema.Int, purpose: MailTokenPurpose }),
      execute: (r) => sql`delete from mail_tokens where user_id = ${r.userId} and purpose = ${r.purpose} and used_at is null`
    })

    const presented = (token: string, purpose: MailTokenPurpose, now: Date, email?: string) =>
      ({ tokenHash: sha256Hex(token), purpose, now, email: email ?? null }) as const

    const purgeBatch = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ id: Schema.Int }),
      execute: (now) =>
        sql`delete from mail_tokens where id in (
              select id from mail_tokens where used_at is not null or expires_at <= ${now} limit ${PURGE_BATCH}
            ) returning id`
    })

    /** [D80] rev. 2: spent and expired tokens go, a batch at a time (no long lock) */
    const purgeSpent = (now: Date) =>
      Effect.gen(function* () {
        let total = 0
        for (;;) {
          const gone = (yield* purgeBatch(now)).length
          total += gone
          if (gone < PURGE_BATCH) return total
        }
      }).pipe(Effect.orDie)

    return {
      purgeSpent,
      issue: (userId: UserId, purpose: MailTokenPurpose, now: Date) => {
        const token = randomToken(TOKEN_LENGTH)
        return insert({ userId, purpose, tokenHash: sha256Hex(token), expiresAt: new Date(now.getTime() + ttl(purpose)), now }).pipe(
          Effect.as(token),
          Effect.orDie
        )
      },
      /** A reset token for the account of `email`, when there is one; the same single statement either way. */
      issueResetFor: (email: string, now: Date) => {
        const token = randomToken(TOKEN_LENGTH)
        return insertResetFor({ email, tokenHash: sha256Hex(token), expiresAt: new Date(now.getTime() + RESET_TTL_MS), now }).pipe(
          Effect.map(Option.map((row) => ({ token, userId: row.user_id }))),
          Effect.orDie
        )
      },
      /** The user of a live token (of `email`, when given), without using it. */
      peek: (token: string, purpose: MailTokenPurpose, now: Date, email?: string) =>
        liveOwner(presented(token, purpose, now, email)).pipe(Effect.map(Option.map((row) => row.user_id)), Effect.orDie),
      /** Marks the token used and returns its user, if it is live (and belongs to `email`, when given). */
      consume: (token: string, purpose: MailTokenPurpose, now: Date, email?: string) =>
        use(presented(token, purpose, now, email)).pipe(Effect.map(Option.map((row) => row.user_id)), Effect.orDie),
      /** Drops the user's unused tokens of this purpose (a newer one replaces them). */
      invalidate: (userId: UserId, purpose: MailTokenPurpose) => Effect.orDie(dropUnused({ userId, purpose }))
    } as const
  })
}) {}
