import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { periodStart } from "./Bandwidth.ts"
import type { ServerId } from "../platform/Ids.ts"

/** A row of the change log: a key on a server, a user (every server), a server, or everything. */
const ChangeRow = Schema.Struct({
  server_id: Schema.NullOr(Schema.Int),
  user_id: Schema.NullOr(Schema.Int),
  public_key: Schema.NullOr(Schema.String),
  /** issue 34: a plan's limits changed (migration 50): its members' peers */
  plan_id: Schema.NullOr(Schema.Int)
})

/** What changed for one server after a revision. */
export interface ServerChanges {
  /** a change that concerns every peer of the server (its grants) */
  readonly everything: boolean
  readonly keys: ReadonlyArray<string>
  readonly userIds: ReadonlyArray<number>
  /** plans whose limits changed: the peers of their members (issue 34) */
  readonly planIds: ReadonlyArray<number>
}

const Revision = Schema.NumberFromString

/**
 * [D92]: the node change log (`vpn_peer_changes`), written by the triggers of migration 0008 at
 * commit, in revision order. Reading "nothing changed" is two index reads.
 */
export class PeerChanges extends Effect.Service<PeerChanges>()("vpn/PeerChanges", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const state = SqlSchema.single({
      Request: Schema.String,
      Result: Schema.Struct({ head: Revision, oldest: Revision, tick: Schema.NullOr(Revision) }),
      execute: (period) => sql`
        select (select max(revision) from vpn_peer_changes)::text as head,
               -- the month markers are kept apart from the pruning ([D92]): the oldest change is what counts
               coalesce((select min(revision) from vpn_peer_changes where period is null),
                        (select max(revision) from vpn_peer_changes))::text as oldest,
               (select revision from vpn_peer_changes where period = ${period}::date)::text as tick`
    })
    const lock = SqlSchema.void({ Request: Schema.Void, execute: () => sql`select pg_advisory_xact_lock(4080091)` })
    const tickInsert = SqlSchema.void({
      Request: Schema.String,
      execute: (period) => sql`insert into vpn_peer_changes (period) values (${period}::date) on conflict (period) do nothing`
    })
    const since = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, after: Schema.Number, upTo: Schema.Number }),
      Result: ChangeRow,
      execute: ({ after, serverId, upTo }) => sql`
        select server_id, user_id, public_key, plan_id from vpn_peer_changes
        where revision > ${after} and revision <= ${upTo} and (server_id = ${serverId} or server_id is null)
          and period is null
        order by revision`
    })

    const dayRow = SqlSchema.findOne({
      Request: Schema.Number,
      Result: Schema.Struct({ day: Schema.String }),
      // day rows grow with their revisions: the period index read backwards stops at the first fit
      execute: (after) => sql`
        select to_char(period, 'YYYY-MM-DD') as day from vpn_peer_changes
        where period is not null and revision <= ${after}
        order by period desc limit 1`
    })

    return {
      /**
       * The newest revision, the oldest one kept, and the revision of the day's first poll (made
       * now when this is it: quota periods start again on a day, [D95]). `day` is `YYYY-MM-DD`.
       */
      state: (day: string) =>
        Effect.gen(function* () {
          const first = yield* state(day)
          if (first.tick !== null) return { ...first, tick: first.tick }
          yield* sql.withTransaction(Effect.zipRight(lock(undefined), tickInsert(day)))
          const again = yield* state(day)
          return { ...again, tick: again.tick ?? again.head }
        }).pipe(Effect.orDie),
      /**
       * The day (`YYYY-MM-DD`) a cursor was handed out on: every poll marks its day before it
       * answers, so that is the newest day row at or before the cursor (none when it is gone)
       */
      dayOf: (after: number) => dayRow(after).pipe(Effect.map(Option.map((r) => r.day)), Effect.orDie),
      /** what changed for the server in (after, upTo] */
      forServer: (serverId: ServerId, after: number, upTo: number) =>
        since({ serverId, after, upTo }).pipe(
          Effect.map((rows): ServerChanges => {
            const keys = new Set<string>()
            const userIds = new Set<number>()
            const planIds = new Set<number>()
            let everything = false
            for (const r of rows) {
              if (r.public_key !== null) keys.add(r.public_key)
              else if (r.user_id !== null) userIds.add(r.user_id)
              else if (r.plan_id !== null) planIds.add(r.plan_id)
              else everything = true
            }
            return { everything, keys: [...keys], userIds: [...userIds], planIds: [...planIds] }
          }),
          Effect.orDie
        )
    } as const
  })
}) {
  /**
   * [D92]: the log keeps its newest `keep` revisions (and this month's marker); older rows go in
   * batches, so a node whose cursor fell behind them gets 422 `errors.since` and fetches the full
   * list. How many went.
   */
  static readonly prune = (keep: number = CHANGES_KEPT): Effect.Effect<number, never, SqlClient.SqlClient | AppClock> =>
    Effect.gen(function* () {
      const month = periodStart(yield* Effect.flatMap(AppClock, (clock) => clock.now))
      const batch = (keep: number) => pruneBatch({ keep, month })
      let total = 0
      for (;;) {
        const deleted = (yield* batch(keep)).length
        total += deleted
        if (deleted < PRUNE_BATCH) return total
      }
    }).pipe(Effect.orDie)
}

/** one batch of `PeerChanges.prune`: the oldest revisions beyond the newest `keep`, before `month` */
const pruneBatch = SqlSchema.findAll({
  Request: Schema.Struct({ keep: Schema.Int, month: Schema.String }),
  Result: Schema.Struct({ revision: Revision }),
  execute: ({ keep, month }) =>
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`
          delete from vpn_peer_changes where revision in (
            select revision from vpn_peer_changes
            where revision <= (select max(revision) from vpn_peer_changes) - ${keep}
              and (period is null or period < ${month}::date)
            order by revision limit ${PRUNE_BATCH}
          )
          returning revision::text as revision`
    )
})

/** revisions the node change log keeps: a node may lag this many changes behind and still catch up */
export const CHANGES_KEPT = 1_000_000
const PRUNE_BATCH = 10_000
