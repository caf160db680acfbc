import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { TooManyAttempts } from "../platform/Errors.ts"
import type { UserId } from "../platform/Ids.ts"

const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** [D117]: e-mail changes per user an hour, and to any one new address a day */
export const EMAIL_CHANGES_PER_HOUR = 3
export const EMAIL_CHANGES_PER_ADDRESS_PER_DAY = 3

/**
 * The limits on e-mail changes of [D117]: each change sends mail to the new address (and the old
 * one), so a session (or a script) changing it in a loop would bomb an address its owner never
 * registered. Call `admit` inside the change's transaction, after the user's row is locked: the
 * user's lock orders one user's changes, an advisory lock on the new address orders every user's
 * changes to it, so a burst of parallel requests lets exactly the limit through.
 */
export class EmailChanges extends Effect.Service<EmailChanges>()("accounts/EmailChanges", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock

    const lockAddress = SqlSchema.void({
      Request: Schema.String,
      execute: (email) => sql`select pg_advisory_xact_lock(hashtextextended(${email}, 23))`
    })
    const recent = SqlSchema.single({
      Request: Schema.Struct({ userId: Schema.Int, email: Schema.String, hourAgo: Schema.DateFromSelf, dayAgo: Schema.DateFromSelf }),
      Result: Schema.Struct({ by_user: Schema.Int, to_address: Schema.Int }),
      execute: (q) => sql`
        select
          (select count(*) from email_changes where user_id = ${q.userId} and changed_at > ${q.hourAgo})::int as by_user,
          (select count(*) from email_changes where new_email = ${q.email} and changed_at > ${q.dayAgo})::int as to_address`
    })
    const record = SqlSchema.void({
      Request: Schema.Struct({ userId: Schema.Int, email: Schema.String, now: Schema.DateFromSelf, dayAgo: Schema.DateFromSelf }),
      // what is older than the longest window counts no more: this user's and this address's go
      execute: (r) => sql`
        with gone as (
          delete from email_changes where changed_at <= ${r.dayAgo} and (user_id = ${r.userId} or new_email = ${r.email})
        )
        insert into email_changes (user_id, new_email, changed_at) values (${r.userId}, ${r.email}, ${r.now})`
    })

    /** counts this change of `userId`'s e-mail to `email`, or fails with 429 past either limit */
    const admit = (userId: UserId, email: string) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const dayAgo = new Date(now.getTime() - DAY_MS)
        yield* Effect.orDie(lockAddress(email))
        const counts = yield* Effect.orDie(recent({ userId, email, hourAgo: new Date(now.getTime() - HOUR_MS), dayAgo }))
        if (counts.by_user >= EMAIL_CHANGES_PER_HOUR || counts.to_address >= EMAIL_CHANGES_PER_ADDRESS_PER_DAY) {
          return yield* Effect.fail(new TooManyAttempts())
        }
        yield* Effect.orDie(record({ userId, email, now, dayAgo }))
      })

    return { admit } as const
  })
}) {}
