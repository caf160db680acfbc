import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Services as Subscriptions, type Subscription } from "../services/Services.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, orNotFound, ValidationError } from "../platform/Errors.ts"
import * as Bandwidth from "./Bandwidth.ts"
import { Credentials } from "./Credentials.ts"
import { Peers } from "./Peers.ts"

const MAX_BYTES = Bandwidth.MAX_BYTES
const MAX_BIG = BigInt(MAX_BYTES)

/** One entry of a node's usage report ([D54]): counter deltas of a peer or an OpenVPN user. */
export interface UsageEntry {
  readonly public_key?: string
  readonly username?: string
  readonly rx_bytes: number
  readonly tx_bytes: number
}

/** One report at most this long (a node sends one entry per active peer, in batches). */
export const MAX_USAGE_ENTRIES = 10_000

type FieldErrors = Record<string, Array<string>>

const pastMax = (field: string) => `The ${field} field would carry the usage total past ${MAX_BYTES} bytes.`

/** Field errors of a usage report, keyed `<index>.<field>` as Laravel does for arrays. */
export const checkUsageReport = (
  entries: ReadonlyArray<unknown>
): { readonly entries: ReadonlyArray<UsageEntry>; readonly errors: FieldErrors } => {
  const errors: FieldErrors = {}
  const out: Array<UsageEntry> = []
  const add = (key: string, text: string) => (errors[key] ??= []).push(text)
  if (entries.length > MAX_USAGE_ENTRIES) {
    add("body", `The body must not have more than ${MAX_USAGE_ENTRIES} items.`)
    return { entries: [], errors }
  }
  entries.forEach((raw, i) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      add(`${i}`, `The ${i} field must be an object.`)
      return
    }
    const e = raw as Record<string, unknown>
    const counter = (field: "rx_bytes" | "tx_bytes") => {
      const v = e[field]
      if (v === undefined || v === null) add(`${i}.${field}`, `The ${i}.${field} field is required.`)
      else if (typeof v !== "number" || !Number.isInteger(v)) add(`${i}.${field}`, `The ${i}.${field} field must be an integer.`)
      else if (v < 0) add(`${i}.${field}`, `The ${i}.${field} field must be at least 0.`)
      else if (v > MAX_BYTES) add(`${i}.${field}`, `The ${i}.${field} field must not be greater than ${MAX_BYTES}.`)
      else return v
      return 0
    }
    const rx = counter("rx_bytes")
    const tx = counter("tx_bytes")
    const key = e["public_key"]
    const user = e["username"]
    const present = (v: unknown) => v !== undefined && v !== null
    if (!present(key) && !present(user)) {
      add(`${i}.public_key`, `The ${i}.public_key field is required when ${i}.username is not present.`)
    } else if (present(key) && present(user)) {
      add(`${i}.public_key`, `The ${i}.public_key field prohibits ${i}.username from being present.`)
    } else if (present(key) && (typeof key !== "string" || key.length === 0 || key.length > 255)) {
      add(`${i}.public_key`, `The ${i}.public_key field must be a string.`)
    } else if (present(user) && (typeof user !== "string" || user.length === 0 || user.length > 255)) {
      add(`${i}.username`, `The ${i}.username field must be a string.`)
    }
    out.push({
      ...(typeof key === "string" ? { public_key: key } : {}),
      ...(typeof user === "string" ? { username: user } : {}),
      rx_bytes: rx,
      tx_bytes: tx
    })
  })
  return { entries: out, errors }
}

/** [D70]: what an admin's addition answers. */
export const UsageRecorded = Schema.Struct({
  service_id: Schema.Int,
  period: Schema.String,
  used_bytes: Schema.Int,
  used_formatted: Schema.String
})

/** The counter (`<index>.rx_bytes` / `.tx_bytes`) whose addition first carries `start` past 2^53 - 1, in report order. */
const firstPastMax = (start: number, entries: ReadonlyArray<readonly [number, UsageEntry]>): string | undefined => {
  let total = BigInt(start)
  for (const [i, entry] of entries) {
    for (const field of ["rx_bytes", "tx_bytes"] as const) {
      total += BigInt(entry[field])
      if (total > MAX_BIG) return `${i}.${field}`
    }
  }
  return undefined
}

/** A month's total; stored totals past 2^53 - 1 (written by hand) read as that bound. */
const MonthTotal = Schema.Struct({ service_id: Schema.Int, used: Schema.Int })
const HistoryRow = Schema.Struct({ period: Schema.String, used: Schema.Int })
// the deltas are checked by the callers; the unchecked `add` may carry any int8
const Delta = Schema.Struct({ serviceId: Schema.Int, period: Schema.String, rx: Schema.NonNegative, tx: Schema.NonNegative })

/**
 * Usage per service per UTC calendar month ([D55]). Additions are single upserts, so
 * concurrent reports add up exactly; no total ever passes 2^53 - 1 through the API ([D54]).
 */
export class Usage extends Effect.Service<Usage>()("vpn/Usage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const subscriptions = yield* Subscriptions
    const peers = yield* Peers
    const credentials = yield* Credentials
    const used = sql`least(rx_bytes::numeric + tx_bytes, 9007199254740991)::int8`

    const upsert = SqlSchema.single({
      Request: Delta,
      Result: MonthTotal,
      execute: (d) => sql`
        insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
        values (${d.serviceId}, ${d.period}::date, ${d.rx}, ${d.tx}, now())
        on conflict (service_id, period) do update set
          rx_bytes = usage_records.rx_bytes + excluded.rx_bytes,
          tx_bytes = usage_records.tx_bytes + excluded.tx_bytes,
          updated_at = now()
        returning service_id, ${used} as used`
    })
    /** the addition, unless it would carry the month's total past 2^53 - 1 (then nothing is written) */
    const guardedUpsert = SqlSchema.findOne({
      Request: Delta,
      Result: MonthTotal,
      execute: (d) => sql`
        insert into usage_records (service_id, period, rx_bytes, tx_bytes, updated_at)
        values (${d.serviceId}, ${d.period}::date, ${d.rx}, ${d.tx}, now())
        on conflict (service_id, period) do update set
          rx_bytes = usage_records.rx_bytes + excluded.rx_bytes,
          tx_bytes = usage_records.tx_bytes + excluded.tx_bytes,
          updated_at = now()
        where usage_records.rx_bytes::numeric + usage_records.tx_bytes + excluded.rx_bytes + excluded.tx_bytes
              <= 9007199254740991
        returning service_id, ${used} as used`
    })
    const monthRows = SqlSchema.findAll({
      Request: Schema.Struct({ serviceIds: Schema.Array(Schema.Int), period: Schema.String }),
      Result: MonthTotal,
      execute: ({ period, serviceIds }) => sql`
        select service_id, ${used} as used from usage_records
        where period = ${period}::date and service_id in ${sql.in(serviceIds)}`
    })
    const historyRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: HistoryRow,
      execute: (serviceId) => sql`
        select to_char(period, 'YYYY-MM-DD') as period, ${used} as used from usage_records
        where service_id = ${serviceId} and (rx_bytes > 0 or tx_bytes > 0)
        order by period desc`
    })

    /** this month's bytes for several services at once */
    const months = (serviceIds: ReadonlyArray<number>, period: string) =>
      (serviceIds.length === 0 ? Effect.succeed([]) : monthRows({ serviceIds: [...new Set(serviceIds)], period })).pipe(
        Effect.map((rows) => new Map(rows.map((r) => [r.service_id, r.used])) as ReadonlyMap<number, number>),
        Effect.orDie
      )
    const month = (serviceId: number, period: string) =>
      Effect.map(months([serviceId], period), (m) => m.get(serviceId) ?? 0)
    /** every month with usage, newest first */
    const history = (serviceId: number) =>
      historyRows(serviceId).pipe(
        Effect.map((rows) => rows.map((r) => ({ period: r.period, usedBytes: r.used }))),
        Effect.orDie
      )

    /**
     * [D54]: a node's counter deltas, added to each owner's current service for this month, all
     * or nothing. Entries resolve to services first (reads only); a report that would carry any
     * month past 2^53 - 1 is refused (422) before anything is written; the sums are then written
     * in service-id order, so concurrent reports take their row locks in one order.
     */
    const record = (serverId: number, payload: ReadonlyArray<unknown>) =>
      Effect.gen(function*() {
        const checked = checkUsageReport(payload)
        if (Object.keys(checked.errors).length > 0) return yield* Effect.fail(new ValidationError({ errors: checked.errors }))
        const entries = checked.entries
        const period = Bandwidth.periodStart(yield* clock.now)
        return yield* sql.withTransaction(Effect.gen(function*() {
          const byKey = yield* peers.ownersOf(serverId, entries.flatMap((e) => e.public_key ?? []))
          const byName = yield* credentials.usersOf(entries.flatMap((e) => e.username ?? []))
          const services = new Map<number, Option.Option<number>>()
          const sums = new Map<number, { rx: bigint; tx: bigint; entries: Array<number> }>()
          for (const [i, entry] of entries.entries()) {
            const owner = entry.public_key !== undefined ? byKey.get(entry.public_key) : byName.get(entry.username ?? "")
            if (owner === undefined) continue
            let serviceId = services.get(owner)
            if (serviceId === undefined) {
              serviceId = Option.map(yield* subscriptions.current(owner), (s) => s.id)
              services.set(owner, serviceId)
            }
            if (Option.isNone(serviceId)) continue
            let sum = sums.get(serviceId.value)
            if (sum === undefined) sums.set(serviceId.value, sum = { rx: 0n, tx: 0n, entries: [] })
            sum.rx += BigInt(entry.rx_bytes)
            sum.tx += BigInt(entry.tx_bytes)
            sum.entries.push(i)
          }
          const before = yield* months([...sums.keys()], period)
          const errors: FieldErrors = {}
          for (const [serviceId, sum] of sums) {
            const field = firstPastMax(before.get(serviceId) ?? 0, sum.entries.map((i) => [i, entries[i]!] as const))
            if (field !== undefined) errors[field] = [pastMax(field)]
          }
          if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
          for (const [serviceId, sum] of [...sums.entries()].sort(([a], [b]) => a - b)) {
            const written = yield* guardedUpsert({ serviceId, period, rx: Number(sum.rx), tx: Number(sum.tx) }).pipe(Effect.orDie)
            if (Option.isNone(written)) {
              // another report got there between the check and the write: refuse this one whole
              const field = `${sum.entries[sum.entries.length - 1]}.rx_bytes`
              return yield* Effect.fail(ValidationError.field(field, pastMax(field)))
            }
          }
          return { accepted: [...sums.values()].reduce((n, s) => n + s.entries.length, 0) }
        })).pipe(Effect.catchTag("SqlError", Effect.die))
      })

    /** [D70]: an admin adds bytes to a service's month (`YYYY-MM`, default this one); 422 past 2^53 - 1, nothing saved */
    const addToService = (serviceId: number, bytes: number, periodLabel: string | undefined) =>
      Effect.gen(function*() {
        const service = yield* orNotFound(yield* subscriptions.findById(serviceId))
        const period = periodLabel !== undefined ? Bandwidth.parsePeriod(periodLabel)! : Bandwidth.periodStart(yield* clock.now)
        const refused = ValidationError.field("bytes", pastMax("bytes"))
        const total = yield* sql.withTransaction(Effect.gen(function*() {
          if ((yield* month(service.id, period)) + bytes > MAX_BYTES) return yield* Effect.fail(refused)
          const written = yield* guardedUpsert({ serviceId: service.id, period, rx: bytes, tx: 0 }).pipe(Effect.orDie)
          return Option.isSome(written) ? written.value.used : yield* Effect.fail(refused)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        const recorded: typeof UsageRecorded.Type = {
          service_id: service.id,
          period: Bandwidth.periodLabel(period),
          used_bytes: total,
          used_formatted: Bandwidth.formatBytes(total)
        }
        return recorded
      })

    const bandwidthOf = (service: Subscription) =>
      Effect.gen(function*() {
        const now = yield* clock.now
        const usedBytes = yield* month(service.id, Bandwidth.periodStart(now))
        return Bandwidth.usage({ usedBytes, bandwidthLimitGb: service.plan.bandwidthLimitGb, now })
      })

    const currentService = (userId: number) => Effect.flatMap(subscriptions.current(userId), orNotFound)

    return {
      /** adds the deltas to the month `period` (`YYYY-MM-01`) unchecked; the month's new total */
      add: (serviceId: number, period: string, rx: number, tx: number) =>
        upsert({ serviceId, period, rx, tx }).pipe(Effect.map((r) => r.used), Effect.orDie),
      month,
      months,
      history,
      record,
      addToService,
      /** [D55]: the caller's service's month (404 for another user's) */
      ofService: (userId: number, serviceId: number) =>
        Effect.flatMap(Effect.flatMap(subscriptions.findOwned(userId, serviceId), orNotFound), bandwidthOf),
      /** [D55]: the current service's month (404 without one) */
      current: (userId: number) => Effect.flatMap(currentService(userId), bandwidthOf),
      /** [D55]: the current service's months with usage, newest first, at most 12 */
      historyOf: (userId: number): Effect.Effect<ReadonlyArray<Bandwidth.HistoryEntry>, NotFound> =>
        Effect.gen(function*() {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          return rows.slice(0, 12).map((m) => Bandwidth.historyEntry(Bandwidth.periodLabel(m.period), m.usedBytes))
        }),
      /** [D55]: the current service's total and this month's */
      summaryOf: (userId: number) =>
        Effect.gen(function*() {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          const period = Bandwidth.periodStart(yield* clock.now)
          const total = Math.min(MAX_BYTES, rows.reduce((sum, m) => sum + m.usedBytes, 0))
          return Bandwidth.summary(total, rows.find((m) => m.period === period)?.usedBytes ?? 0)
        })
    } as const
  }),
  dependencies: [Subscriptions.Default, Peers.Default, Credentials.Default]
}) {}
