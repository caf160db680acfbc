import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { UserId } from "../../platform/Ids.ts"

const Now = Schema.DateFromSelf

/** A user's linked chat as stored ([D125]). */
export const TelegramLinkRow = Schema.Struct({
  user_id: UserId,
  telegram_id: Schema.String,
  username: Schema.NullOr(Schema.String),
  linked_at: Now
})
export type TelegramLinkRow = typeof TelegramLinkRow.Type

const UserOnly = Schema.Struct({ user_id: UserId })
const CodeRow = Schema.Struct({ user_id: UserId, expires_at: Now })
const Digest = Schema.Struct({ digest: Schema.String })
const Count = Schema.Struct({ n: Schema.Int })

/**
 * The tables of [D125] the accounts room owns: `telegram_links` (one chat per user, one user per
 * chat), `telegram_link_codes` (one-time codes, hashed) and `telegram_sign_ins` (the replay store
 * of sign-in with Telegram). Statements run on the caller's transaction when there is one; SQL and
 * parse failures are defects here.
 */
export class TelegramLinks extends Effect.Service<TelegramLinks>()("accounts/TelegramLinks", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const ofUser = SqlSchema.findOne({
      Request: Schema.Int,
      Result: TelegramLinkRow,
      execute: (userId) => sql`select user_id, telegram_id, username, linked_at from telegram_links where user_id = ${userId}`
    })
    const ofChat = SqlSchema.findOne({
      Request: Schema.String,
      Result: TelegramLinkRow,
      execute: (telegramId) => sql`select user_id, telegram_id, username, linked_at from telegram_links where telegram_id = ${telegramId}`
    })
    const deleteOfUser = SqlSchema.findAll({
      Request: Schema.Int,
      Result: UserOnly,
      execute: (userId) => sql`delete from telegram_links where user_id = ${userId} returning user_id`
    })
    const deleteOfChat = SqlSchema.findOne({
      Request: Schema.String,
      Result: UserOnly,
      execute: (telegramId) => sql`delete from telegram_links where telegram_id = ${telegramId} returning user_id`
    })
    const upsert = SqlSchema.void({
      Request: Schema.Struct({ userId: Schema.Int, telegramId: Schema.String, username: Schema.NullOr(Schema.String), now: Now }),
      execute: (r) => sql`
        insert into telegram_links (user_id, telegram_id, username, linked_at)
        values (${r.userId}, ${r.telegramId}, ${r.username}, ${r.now})
        on conflict (user_id) do update set telegram_id = excluded.telegram_id, username = excluded.username, linked_at = excluded.linked_at`
    })
    // one /start per chat at a time: the chat's link is decided in order ([D125])
    const lockChat = SqlSchema.void({
      Request: Schema.String,
      execute: (telegramId) => sql`select pg_advisory_xact_lock(hashtext(${`telegram-chat:${telegramId}`}))`
    })

    const dropCodes = SqlSchema.void({
      Request: Schema.Int,
      execute: (userId) => sql`delete from telegram_link_codes where user_id = ${userId}`
    })
    const insertCode = SqlSchema.void({
      Request: Schema.Struct({ hash: Schema.String, userId: Schema.Int, expiresAt: Now, now: Now }),
      execute: (r) => sql`
        insert into telegram_link_codes (code_hash, user_id, expires_at, created_at)
        values (${r.hash}, ${r.userId}, ${r.expiresAt}, ${r.now})`
    })
    const codeRow = SqlSchema.findOne({
      Request: Schema.String,
      Result: CodeRow,
      execute: (hash) => sql`select user_id, expires_at from telegram_link_codes where code_hash = ${hash} for update`
    })

    const usedSignIn = SqlSchema.findOne({
      Request: Schema.String,
      Result: Digest,
      execute: (digest) => sql`select digest from telegram_sign_ins where digest = ${digest}`
    })
    const insertSignIn = SqlSchema.findOne({
      Request: Schema.Struct({ digest: Schema.String, userId: Schema.Int, expiresAt: Now }),
      Result: Digest,
      execute: (r) => sql`
        insert into telegram_sign_ins (digest, user_id, expires_at) values (${r.digest}, ${r.userId}, ${r.expiresAt})
        on conflict (digest) do nothing
        returning digest`
    })
    const purgeRows = SqlSchema.single({
      Request: Now,
      Result: Count,
      execute: (now) => sql`
        with codes as (delete from telegram_link_codes where expires_at < ${now} returning 1),
             uses as (delete from telegram_sign_ins where expires_at < ${now} returning 1)
        select ((select count(*) from codes) + (select count(*) from uses))::int as n`
    })

    return {
      /** the user's linked chat */
      ofUser: (userId: UserId) => Effect.orDie(ofUser(userId)),
      /** the link of a Telegram account (a private chat's id is its user's id) */
      ofChat: (telegramId: string) => Effect.orDie(ofChat(telegramId)),
      /** the user's chat is unlinked; whether there was one */
      unlinkUser: (userId: UserId) => Effect.map(Effect.orDie(deleteOfUser(userId)), (rows) => rows.length > 0),
      /** a chat that cannot be reached any more is unlinked; the user it was linked to */
      unlinkChat: (telegramId: string) =>
        Effect.map(
          Effect.orDie(deleteOfChat(telegramId)),
          Option.map((r) => r.user_id)
        ),
      /** the user's chat is this one (an earlier chat of theirs is replaced) */
      link: (input: { readonly userId: UserId; readonly telegramId: string; readonly username: string | null; readonly now: Date }) =>
        Effect.orDie(upsert(input)),
      lockChat: (telegramId: string) => Effect.orDie(lockChat(telegramId)),
      /** a new one-time code replaces the user's earlier ones */
      issueCode: (input: { readonly hash: string; readonly userId: UserId; readonly expiresAt: Date; readonly now: Date }) =>
        Effect.orDie(Effect.zipRight(dropCodes(input.userId), insertCode(input))),
      /** the code's row, locked for the caller's transaction */
      code: (hash: string) => Effect.orDie(codeRow(hash)),
      dropCodes: (userId: UserId) => Effect.orDie(dropCodes(userId)),
      /** whether this signed data set already signed someone in */
      signInUsed: (digest: string) => Effect.map(Effect.orDie(usedSignIn(digest)), Option.isSome),
      /** the data set signs in now; `false`: it already did (a replay, or a race lost) */
      useSignIn: (input: { readonly digest: string; readonly userId: UserId; readonly expiresAt: Date }) =>
        Effect.map(Effect.orDie(insertSignIn(input)), Option.isSome),
      /** expired codes and sign-in records go (the jobs of [D80]); how many */
      purge: (now: Date) => Effect.map(Effect.orDie(purgeRows(now)), (r) => r.n)
    } as const
  })
}) {}
