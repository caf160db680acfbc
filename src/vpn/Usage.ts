import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** One month of a service's usage: `period` is `YYYY-MM-01`. */
export interface MonthUsage {
  readonly period: string
  readonly usedBytes: number
}

/**
 * Usage per service per UTC calendar month ([D55]). Additions are single upserts, so
 * concurrent reports add up exactly.
 */
export class Usage extends Context.Tag("vpn/Usage")<Usage, {
  /** adds the deltas to the month `period` (`YYYY-MM-01`), atomically; the month's new total */
  readonly add: (serviceId: number, period: string, rxBytes: number, txBytes: number) => Effect.Effect<number>
  readonly month: (serviceId: number, period: string) => Effect.Effect<number>
  /** this month's bytes for several services at once */
  readonly months: (serviceIds: ReadonlyArray<number>, period: string) => Effect.Effect<ReadonlyMap<number, number>>
  /** every month with usage, newest first */
  readonly history: (serviceId: number) => Effect.Effect<ReadonlyArray<MonthUsage>>
}>() {
  static readonly Live = Layer.effect(
    Usage,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        add: (serviceId, period, rx, tx) =>
          sql<{ used: number }>`
            insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
            values (${serviceId}, ${period}::date, ${rx}, ${tx}, now())
            on conflict (service_id, period) do update set
              rx_bytes = usage_records.rx_bytes + excluded.rx_bytes,
              tx_bytes = usage_records.tx_bytes + excluded.tx_bytes,
              updated_at = now()
            returning (rx_bytes + tx_bytes) as used`.pipe(Effect.map((rows) => Number(rows[0]!.used)), Effect.orDie),
        month: (serviceId, period) =>
          sql<{ used: number }>`
            select (rx_bytes + tx_bytes) as used from usage_records
            where service_id = ${serviceId} and period = ${period}::date`.pipe(
            Effect.map((rows) => Number(rows[0]?.used ?? 0)),
            Effect.orDie
          ),
        months: (serviceIds, period) =>
          serviceIds.length === 0
            ? Effect.succeed(new Map())
            : sql<{ service_id: number; used: number }>`
              select service_id, (rx_bytes + tx_bytes) as used from usage_records
              where period = ${period}::date and service_id in ${sql.in([...new Set(serviceIds)])}`.pipe(
              Effect.map((rows) => new Map(rows.map((r) => [r.service_id, Number(r.used)]))),
              Effect.orDie
            ),
        history: (serviceId) =>
          sql<{ period: string; used: number }>`
            select to_char(period, 'YYYY-MM-DD') as period, (rx_bytes + tx_bytes) as used from usage_records
            where service_id = ${serviceId} and rx_bytes + tx_bytes > 0
            order by period desc`.pipe(
            Effect.map((rows) => rows.map((r) => ({ period: r.period, usedBytes: Number(r.used) }))),
            Effect.orDie
          )
      }
    })
  )
}
