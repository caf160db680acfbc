import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { leanRow } from "../platform/LeanRow.ts"
import { ReadSql } from "../platform/ReadSql.ts"
import { ServiceId } from "../platform/Ids.ts"

/** A period's total; stored totals past 2^53 - 1 (written by hand) read as that bound. */
const MonthTotal = Schema.Struct({ service_id: ServiceId, used: Schema.Int })
const MonthTotalRow = leanRow("MonthTotal", { service_id: "int", used: "int" })
const HistoryRow = Schema.Struct({ period: Schema.String, used: Schema.Int })
// the deltas are checked by the callers; the unchecked `add` may carry any int8
const Delta = Schema.Struct({ serviceId: Schema.Int, period: Schema.String, rx: Schema.NonNegative, tx: Schema.NonNegative })

/**
 * The `usage_records` and `peer_counters` statements of the usage rules (`Usage.ts`): usage per
 * service per quota period ([D55], [D95]: keyed by the period's start date), added by upserts.
 */
export class UsageRows extends Effect.Service<UsageRows>()("vpn/UsageRows", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // a service's history (and the summary made of it) may lag ([D126]): on the replicas when there are
    const readSql = yield* ReadSql
    const used = sql`least(rx_bytes::numeric + tx_bytes, 9007199254740991)::int8`

    /** adds a delta to its month; `guarded`: unless it would carry the total past 2^53 - 1 (then nothing is written) */
    const addToMonth = (d: typeof Delta.Type, guarded: boolean) => sql`
      insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
      values (${d.serviceId}, ${d.period}::date, ${d.rx}, ${d.tx}, now())
      on conflict (service_id, period) do update set
        rx_bytes = usage_records.rx_bytes + excluded.rx_bytes,
        tx_bytes = usage_records.tx_bytes + excluded.tx_bytes,
        updated_at = now()
      ${guarded ? sql`where usage_records.rx_bytes::numeric + usage_records.tx_bytes + excluded.rx_bytes + excluded.tx_bytes <= 9007199254740991` : sql.literal("")}
      returning service_id, ${used} as used`
    const upsert = SqlSchema.single({ Request: Delta, Result: MonthTotal, execute: (d) => addToMonth(d, false) })
    const guardedUpsert = SqlSchema.findOne({ Request: Delta, Result: MonthTotal, execute: (d) => addToMonth(d, true) })
    const monthRows = SqlSchema.findAll({
      // PostgreSQL array literals (`{1,2}`, `{2026-11-01,2026-11-01}`), built below: thousands of ids a call
      Request: Schema.Struct({ serviceIds: Schema.String, periods: Schema.String }),
      // thousands of rows for a node's list or report: checked lean (issue 27)
      Result: MonthTotalRow,
      // one primary-key probe per (id, period) (a lateral lookup the planner cannot turn into a
      // hash join): for a report's thousands of ids an `in` list or a join is planned as a scan
      execute: ({ periods, serviceIds }) => sql`
        select u.service_id, u.used
        from unnest(${serviceIds}::int[], ${periods}::date[]) as ids (id, period)
        cross join lateral (
          select service_id, ${used} as used from usage_records
          where service_id = ids.id and period = ids.period limit 1
        ) u`
    })
    /** the sums of one report, each unless it would carry its month past 2^53 - 1; in service-id order */
    const guardedUpsertAll = SqlSchema.findAll({
      Request: Schema.Struct({ sums: Schema.String }),
      Result: MonthTotal,
      execute: ({ sums }) => sql`
        insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
        select r.service_id, r.period, r.rx, r.tx, now()
        from jsonb_to_recordset(${sums}::jsonb) as r(service_id integer, period date, rx bigint, tx bigint)
        order by r.service_id
        on conflict (service_id, period) do update set
          rx_bytes = usage_records.rx_bytes + excluded.rx_bytes,
          tx_bytes = usage_records.tx_bytes + excluded.tx_bytes,
          updated_at = now()
        where usage_records.rx_bytes::numeric + usage_records.tx_bytes + excluded.rx_bytes + excluded.tx_bytes
              <= 9007199254740991
        returning service_id, ${used} as used`
    })
    /**
     * [D94]: a node's cumulative totals replace the last ones, and each row keeps what they add:
     * the increase, or the whole new totals after a reset (either total below the last one) or
     * for a peer's first report. One statement: a concurrent report on the same peer waits for the
     * row and then reads the totals the other one left, so no increase is counted twice; peers
     * are taken in one order, so two reports never wait on each other.
     */
    const advanceCounters = SqlSchema.findAll({
      Request: Schema.Struct({ serverId: Schema.Int, now: Schema.DateFromSelf, totals: Schema.String }),
      Result: Schema.Struct({ kind: Schema.String, peer_key: Schema.String, rx_added: Schema.Int, tx_added: Schema.Int }),
      execute: ({ now, serverId, totals }) => sql`
        insert into peer_counters (server_id, kind, peer_key, rx_total, tx_total, rx_added, tx_added, updated_at)
        select ${serverId}::integer, t.kind, t.peer_key, t.rx_total, t.tx_total, t.rx_total, t.tx_total, ${now}::timestamptz
        from jsonb_to_recordset(${totals}::jsonb) as t(kind text, peer_key text, rx_total bigint, tx_total bigint)
        order by t.kind, t.peer_key
        on conflict (server_id, kind, peer_key) do update set
          rx_added = case when excluded.rx_total < peer_counters.rx_total or excluded.tx_total < peer_counters.tx_total
                          then excluded.rx_total else excluded.rx_total - peer_counters.rx_total end,
          tx_added = case when excluded.rx_total < peer_counters.rx_total or excluded.tx_total < peer_counters.tx_total
                          then excluded.tx_total else excluded.tx_total - peer_counters.tx_total end,
          rx_total = excluded.rx_total,
          tx_total = excluded.tx_total,
          updated_at = excluded.updated_at
        returning kind, peer_key, rx_added, tx_added`
    })
    /** [D122]: a period's two counters, each read as at most 2^53 - 1 */
    const splitRow = SqlSchema.findOne({
      Request: Schema.Struct({ serviceId: Schema.Int, period: Schema.String }),
      Result: Schema.Struct({ rx: Schema.Int, tx: Schema.Int }),
      execute: ({ period, serviceId }) => sql`
        select least(rx_bytes, 9007199254740991)::int8 as rx, least(tx_bytes, 9007199254740991)::int8 as tx
        from usage_records where service_id = ${serviceId} and period = ${period}::date`
    })
    /**
     * Issue 34, [D107] / [D94]: a usage report's deltas counted into each device's day, as the
     * trigger of migration 45 counts what a counters report adds: each entry's device found by its
     * WireGuard peer on the server or its OpenVPN username, summed per device, in device order.
     * Bounded at 2^53 - 1 per day and direction (a device's bytes are read as exact integers).
     */
    const addDeviceDeltas = SqlSchema.void({
      Request: Schema.Struct({ serverId: Schema.Int, now: Schema.DateFromSelf, deltas: Schema.String }),
      execute: ({ deltas, now, serverId }) => sql`
        insert into vpn_device_usage (device_id, server_id, day, rx_bytes, tx_bytes)
        select d.dev, ${serverId}::integer, (${now}::timestamptz at time zone 'UTC')::date,
               least(sum(e.rx), 9007199254740991)::int8, least(sum(e.tx), 9007199254740991)::int8
        from jsonb_to_recordset(${deltas}::jsonb) as e(kind text, peer_key text, rx numeric, tx numeric)
        cross join lateral (
          select case when e.kind = 'public_key'
            then (select device_id from wireguard_peers where server_id = ${serverId}::integer and public_key = e.peer_key)
            else (select device_id from vpn_credentials where username = e.peer_key)
          end as dev
        ) d
        where (e.rx > 0 or e.tx > 0) and d.dev is not null
        group by d.dev
        order by d.dev
        on conflict (device_id, server_id, day) do update set
          rx_bytes = least(vpn_device_usage.rx_bytes::numeric + excluded.rx_bytes, 9007199254740991)::int8,
          tx_bytes = least(vpn_device_usage.tx_bytes::numeric + excluded.tx_bytes, 9007199254740991)::int8`
    })
    const historyRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: HistoryRow,
      execute: (serviceId) => readSql`
        select to_char(period, 'YYYY-MM-DD') as period, least(rx_bytes::numeric + tx_bytes, 9007199254740991)::int8 as used from usage_records
        where service_id = ${serviceId} and (rx_bytes > 0 or tx_bytes > 0)
        order by period desc`
    })

    /** the bytes of several services' periods at once (`period`: a period's start date), by service id */
    const periodTotals = (keys: ReadonlyArray<{ readonly serviceId: ServiceId; readonly period: string }>) => {
      const unique = [...new Map(keys.map((k) => [k.serviceId, k.period])).entries()]
      return (
        unique.length === 0
          ? Effect.succeed([])
          : monthRows({ serviceIds: `{${unique.map(([id]) => id).join(",")}}`, periods: `{${unique.map(([, period]) => period).join(",")}}` })
      ).pipe(
        Effect.map((rows) => new Map(rows.map((r) => [r.service_id, r.used])) as ReadonlyMap<number, number>),
        Effect.orDie
      )
    }
    /** the bytes of one service's period (`period`: its start date) */
    const month = (serviceId: ServiceId, period: string) => Effect.map(periodTotals([{ serviceId, period }]), (m) => m.get(serviceId) ?? 0)
    /** every month with usage, newest first */
    const history = (serviceId: ServiceId) =>
      historyRows(serviceId).pipe(
        Effect.map((rows) => rows.map((r) => ({ period: r.period, usedBytes: r.used }))),
        Effect.orDie
      )

    return {
      /** adds the deltas to the period starting on `period` (`YYYY-MM-DD`) unchecked; its new total */
      add: (serviceId: ServiceId, period: string, rx: number, tx: number) =>
        upsert({ serviceId, period, rx, tx }).pipe(
          Effect.map((r) => r.used),
          Effect.orDie
        ),
      guardedUpsert,
      guardedUpsertAll,
      advanceCounters,
      addDeviceDeltas,
      periodTotals,
      month,
      history,
      /** [D122]: the received (`rx`, the device's upload) and sent (`tx`) bytes of one service's period */
      split: (serviceId: ServiceId, period: string) =>
        splitRow({ serviceId, period }).pipe(
          Effect.map((row) => Option.getOrElse(row, () => ({ rx: 0, tx: 0 }))),
          Effect.orDie
        )
    } as const
  })
}) {}
