import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { Accepted } from "./Domain.ts"
import type { ServerId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { Accepted }

/** [D94]: an `Idempotency-Key` names one report of one node for this long. */
export const REPORT_KEY_TTL_MS = 86_400_000

/** The routes whose reports carry keys; a key names a report of one route (usage or counters). */
export type ReportRoute = "usage" | "counters"

/** [D94]: 1 to 255 visible ASCII characters (RFC 5234 VCHAR) */
const VALID_KEY = /^[\x21-\x7e]{1,255}$/

/** The field error of a bad `Idempotency-Key`, if it is bad; none when absent. */
export const idempotencyKeyErrors = (key: string | undefined): Record<string, Array<string>> =>
  key === undefined || VALID_KEY.test(key) ? {} : { idempotency_key: ["The idempotency key must be between 1 and 255 visible ASCII characters."] }

const ReportKey = Schema.Struct({ serverId: Schema.Int, route: Schema.String, key: Schema.String })

const PURGE_BATCH = 1000

/**
 * [D94]: the answers of keyed reports. A keyed report claims its key first, in the transaction
 * that counts it, and stores its answer there: a retry either finds the key (the first answer
 * again, nothing added) or counts once. A retry that arrives while the first is being counted
 * waits on the key's row and then finds its answer. Only counted reports keep their key: a
 * refused one (422) saves nothing, so a retry is judged afresh, as Stripe's keys do.
 */
export class UsageReports extends Effect.Service<UsageReports>()("vpn/UsageReports", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock

    /** takes the key unless a live report holds it (a key older than 24 h is taken over) */
    const claim = SqlSchema.findOne({
      Request: Schema.Struct({ ...ReportKey.fields, now: Schema.DateFromSelf, expired: Schema.DateFromSelf }),
      Result: Schema.Struct({ server_id: Schema.Int }),
      execute: (r) => sql`
        insert into usage_reports (server_id, route, idempotency_key, response, created_at)
        values (${r.serverId}, ${r.route}, ${r.key}, null, ${r.now})
        on conflict (server_id, route, idempotency_key) do update set response = null, created_at = excluded.created_at
        where usage_reports.created_at <= ${r.expired}
        returning server_id`
    })
    const answerOf = SqlSchema.single({
      Request: ReportKey,
      Result: Schema.Struct({ response: Accepted }),
      execute: (r) => sql`
        select response from usage_reports
        where server_id = ${r.serverId} and route = ${r.route} and idempotency_key = ${r.key}`
    })
    const save = SqlSchema.void({
      Request: Schema.Struct({ ...ReportKey.fields, response: Schema.String }),
      execute: (r) => sql`
        update usage_reports set response = ${r.response}::jsonb
        where server_id = ${r.serverId} and route = ${r.route} and idempotency_key = ${r.key}`
    })

    /** counts a report in one transaction, once per key when it has one */
    const once = <E>(serverId: ServerId, route: ReportRoute, key: string | undefined, count: Effect.Effect<Accepted, E>) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            if (key === undefined) return yield* count
            const now = yield* clock.now
            const report = { serverId, route, key }
            const claimed = yield* Effect.orDie(claim({ ...report, now, expired: new Date(now.getTime() - REPORT_KEY_TTL_MS) }))
            if (Option.isNone(claimed)) return (yield* Effect.orDie(answerOf(report))).response
            const answer = yield* count
            yield* Effect.orDie(save({ ...report, response: JSON.stringify(answer) }))
            return answer
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))

    return { once } as const
  })
}) {
  /** [D94]: deletes the keys older than 24 h, in batches; how many went */
  static readonly purge: Effect.Effect<number, never, SqlClient.SqlClient | AppClock> = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Effect.flatMap(AppClock, (clock) => clock.now)
    const expired = new Date(now.getTime() - REPORT_KEY_TTL_MS)
    // `created_at` is checked again on the row itself: a key taken over meanwhile stays
    const batch = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ server_id: Schema.Int }),
      execute: (expired) => sql`
        delete from usage_reports where created_at <= ${expired} and (server_id, route, idempotency_key) in (
          select server_id, route, idempotency_key from usage_reports where created_at <= ${expired} limit ${PURGE_BATCH}
        )
        returning server_id`
    })
    let total = 0
    for (;;) {
      const deleted = (yield* batch(expired)).length
      total += deleted
      if (deleted < PURGE_BATCH) return total
    }
  }).pipe(Effect.orDie)
}
