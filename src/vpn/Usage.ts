import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Services as Subscriptions, type Subscription } from "../services/Services.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, orNotFound, ValidationError } from "../platform/Errors.ts"
import * as Bandwidth from "./Bandwidth.ts"
import { Credentials } from "./Credentials.ts"
import { Peers } from "./Peers.ts"
import { idempotencyKeyErrors, UsageReports } from "./UsageReports.ts"

const MAX_BYTES = Bandwidth.MAX_BYTES
const MAX_BIG = BigInt(MAX_BYTES)

/** The counters a report carries: deltas ([D54]) or cumulative totals ([D94]). */
export type CounterFields = readonly ["rx_bytes", "tx_bytes"] | readonly ["rx_total", "tx_total"]
const DELTAS: CounterFields = ["rx_bytes", "tx_bytes"]
const TOTALS: CounterFields = ["rx_total", "tx_total"]

/** One entry of a node's report: a WireGuard peer (`public_key`) or an OpenVPN user (`username`). */
export interface ReportEntry {
  readonly public_key?: string
  readonly username?: string
  readonly rx: number
  readonly tx: number
}

/** One report at most this long (a node sends one entry per active peer, in batches). */
export const MAX_USAGE_ENTRIES = 10_000

type FieldErrors = Record<string, Array<string>>

const pastMax = (field: string) => `The ${field} field would carry the usage total past ${MAX_BYTES} bytes.`

/**
 * Field errors of a node's report, keyed `<index>.<field>` as Laravel does for arrays. With
 * `distinct` (cumulative counters) a peer may appear once per report: two totals of one peer
 * in one report would leave its increase ambiguous.
 */
export const checkReport = (
  entries: ReadonlyArray<unknown>,
  fields: CounterFields,
  distinct: boolean
): { readonly entries: ReadonlyArray<ReportEntry>; readonly errors: FieldErrors } => {
  const errors: FieldErrors = {}
  const out: Array<ReportEntry> = []
  const seen = new Set<string>()
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
    const counter = (field: string) => {
      const v = e[field]
      if (v === undefined || v === null) add(`${i}.${field}`, `The ${i}.${field} field is required.`)
      else if (typeof v !== "number" || !Number.isInteger(v)) add(`${i}.${field}`, `The ${i}.${field} field must be an integer.`)
      else if (v < 0) add(`${i}.${field}`, `The ${i}.${field} field must be at least 0.`)
      else if (v > MAX_BYTES) add(`${i}.${field}`, `The ${i}.${field} field must not be greater than ${MAX_BYTES}.`)
      else return v
      return 0
    }
    const rx = counter(fields[0])
    const tx = counter(fields[1])
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
    } else if (distinct) {
      const [field, value] = typeof key === "string" ? ["public_key", key] as const : ["username", String(user)] as const
      if (seen.has(`${field}:${value}`)) add(`${i}.${field}`, `The ${i}.${field} field has a duplicate value.`)
      seen.add(`${field}:${value}`)
    }
    out.push({
      ...(typeof key === "string" ? { public_key: key } : {}),
      ...(typeof user === "string" ? { username: user } : {}),
      rx,
      tx
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

/** What one entry of a report adds to its owner's month, `index` its place in the report. */
interface Addition {
  readonly index: number
  readonly owner: number
  readonly rx: number
  readonly tx: number
}

/** The counter (`<index>.rx_bytes`, `.tx_total`, ...) whose addition first carries `start` past 2^53 - 1, in report order. */
const firstPastMax = (start: number, additions: ReadonlyArray<Addition>, fields: CounterFields): string | undefined => {
  let total = BigInt(start)
  for (const a of additions) {
    total += BigInt(a.rx)
    if (total > MAX_BIG) return `${a.index}.${fields[0]}`
    total += BigInt(a.tx)
    if (total > MAX_BIG) return `${a.index}.${fields[1]}`
  }
  return undefined
}

/** A period's total; stored totals past 2^53 - 1 (written by hand) read as that bound. */
const MonthTotal = Schema.Struct({ service_id: Schema.Int, used: Schema.Int })
const HistoryRow = Schema.Struct({ period: Schema.String, used: Schema.Int })
// the deltas are checked by the callers; the unchecked `add` may carry any int8
const Delta = Schema.Struct({ serviceId: Schema.Int, period: Schema.String, rx: Schema.NonNegative, tx: Schema.NonNegative })

/**
 * Usage per service per quota period ([D55], [D95]: keyed by the period's start date). Additions are upserts, so concurrent
 * reports add up exactly; no total ever passes 2^53 - 1 through the API ([D54]); a node's
 * report is counted once ([D94]).
 */
export class Usage extends Effect.Service<Usage>()("vpn/Usage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const subscriptions = yield* Subscriptions
    const peers = yield* Peers
    const credentials = yield* Credentials
    const reports = yield* UsageReports
    const notifications = yield* Notifications
    const webhooks = yield* Webhooks
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
      Request: Schema.Struct({ serviceIds: Schema.Array(Schema.Int), periods: Schema.Array(Schema.String) }),
      Result: MonthTotal,
      // one primary-key probe per (id, period) (a lateral lookup the planner cannot turn into a
      // hash join): for a report's thousands of ids an `in` list or a join is planned as a scan
      execute: ({ periods, serviceIds }) => sql`
        select u.service_id, u.used
        from unnest(${`{${serviceIds.join(",")}}`}::int[], ${`{${periods.join(",")}}`}::date[]) as ids (id, period)
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
    const historyRows = SqlSchema.findAll({
      Request: Schema.Int,
      Result: HistoryRow,
      execute: (serviceId) => sql`
        select to_char(period, 'YYYY-MM-DD') as period, ${used} as used from usage_records
        where service_id = ${serviceId} and (rx_bytes > 0 or tx_bytes > 0)
        order by period desc`
    })

    /** the bytes of several services' periods at once (`period`: a period's start date), by service id */
    const periodTotals = (keys: ReadonlyArray<{ readonly serviceId: number; readonly period: string }>) => {
      const unique = [...new Map(keys.map((k) => [k.serviceId, k.period])).entries()]
      return (unique.length === 0
        ? Effect.succeed([])
        : monthRows({ serviceIds: unique.map(([id]) => id), periods: unique.map(([, period]) => period) })).pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.service_id, r.used])) as ReadonlyMap<number, number>),
          Effect.orDie
        )
    }
    /** the bytes of one service's period (`period`: its start date) */
    const month = (serviceId: number, period: string) =>
      Effect.map(periodTotals([{ serviceId, period }]), (m) => m.get(serviceId) ?? 0)
    /** [D95]: each service's current period (of its plan's reset kind) at `now` */
    const periodOf = (service: Subscription, now: Date) =>
      Bandwidth.periodAt({ usageReset: service.plan.usageReset, startsAt: service.startsAt }, now)
    /** [D95]: the bytes of each service's current period, by service id */
    const currentTotals = (services: ReadonlyArray<Subscription>) =>
      Effect.flatMap(clock.now, (now) => periodTotals(services.map((s) => ({ serviceId: s.id, period: periodOf(s, now).start }))))
    /** every month with usage, newest first */
    const history = (serviceId: number) =>
      historyRows(serviceId).pipe(
        Effect.map((rows) => rows.map((r) => ({ period: r.period, usedBytes: r.used }))),
        Effect.orDie
      )

    /** the owners of a report's entries on this node's server, by entry (unknown peers are absent) */
    const ownersOf = (serverId: number, entries: ReadonlyArray<ReportEntry>) =>
      Effect.gen(function*() {
        const byKey = yield* peers.ownersOf(serverId, entries.flatMap((e) => e.public_key ?? []))
        const byName = yield* credentials.usersOf(entries.flatMap((e) => e.username ?? []))
        return entries.map((e) => (e.public_key !== undefined ? byKey.get(e.public_key) : byName.get(e.username ?? "")))
      })

    /**
     * Adds a report's entries to each owner's current service for its current period ([D95]), all or nothing:
     * a report that would carry any month past 2^53 - 1 is refused (422) before anything is
     * written ([D54] rev. 2); the sums are written in one statement in service-id order, so
     * concurrent reports take their row locks in one order. Entries of owners without a current
     * service are not counted. Runs in the report's transaction.
     */
    const addToMonths = (additions: ReadonlyArray<Addition>, fields: CounterFields) =>
      Effect.gen(function*() {
        const now = yield* clock.now
        const current = yield* subscriptions.currentOf(additions.map((a) => a.owner))
        const subscribed = new Map<number, Subscription>()
        const sums = new Map<number, { rx: bigint; tx: bigint; additions: Array<Addition> }>()
        for (const addition of additions) {
          const service = current.get(addition.owner)
          if (service === undefined) continue
          subscribed.set(service.id, service)
          let sum = sums.get(service.id)
          if (sum === undefined) sums.set(service.id, sum = { rx: 0n, tx: 0n, additions: [] })
          sum.rx += BigInt(addition.rx)
          sum.tx += BigInt(addition.tx)
          sum.additions.push(addition)
        }
        const periods = new Map([...subscribed.values()].map((s) => [s.id, periodOf(s, now)]))
        const before = yield* periodTotals([...periods.entries()].map(([serviceId, p]) => ({ serviceId, period: p.start })))
        const errors: FieldErrors = {}
        for (const [serviceId, sum] of sums) {
          const field = firstPastMax(before.get(serviceId) ?? 0, sum.additions, fields)
          if (field !== undefined) errors[field] = [pastMax(field)]
        }
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        if (sums.size > 0) {
          const rows = [...sums.entries()].map(([service_id, sum]) =>
            ({ service_id, period: periods.get(service_id)!.start, rx: Number(sum.rx), tx: Number(sum.tx) }))
          const totals = yield* Effect.orDie(guardedUpsertAll({ sums: JSON.stringify(rows) }))
          const written = new Set(totals.map((r) => r.service_id))
          const raced = [...sums.entries()].find(([serviceId]) => !written.has(serviceId))
          if (raced !== undefined) {
            // another report got there between the check and the write: refuse this one whole
            const field = `${raced[1].additions.at(-1)!.index}.${fields[0]}`
            return yield* Effect.fail(ValidationError.field(field, pastMax(field)))
          }
          // [D96]: a month moved across 80 % or 100 % of its quota: one notice each, in this transaction
          for (const total of totals) {
            yield* quotaNotices(subscribed.get(total.service_id)!, periods.get(total.service_id)!, before.get(total.service_id) ?? 0, total.used)
          }
        }
        return { accepted: [...sums.values()].reduce((n, s) => n + s.additions.length, 0) }
      })

    /** [D96]: the quota notices of a period whose usage went from `before` to `after` bytes (once per period, [D95]) */
    const quotaNotices = (service: Subscription, period: Bandwidth.Period, before: number, after: number) =>
      Effect.gen(function*() {
        const limit = Bandwidth.limitBytes(service.plan.bandwidthLimitGb)
        if (limit === null) return
        for (const percent of [80, 100] as const) {
          const threshold = (limit * percent) / 100
          if (before >= threshold || after < threshold) continue
          yield* notifications.notify({
            userId: service.userId,
            kind: percent === 80 ? "quota-80" : "quota-100",
            dedupeKey: `quota-${percent}:${service.id}:${Bandwidth.labelOf(service.plan.usageReset, period.start)}`,
            view: {
              service_id: service.id,
              plan_name: service.plan.name,
              used_gb: (after / 1024 ** 3).toFixed(2),
              limit_gb: service.plan.bandwidthLimitGb,
              percent: Math.floor((after / limit) * 100),
              period_start: Bandwidth.labelOf(service.plan.usageReset, period.start),
              reset_date: period.next
            }
          })
          // [D101]: with the notice, in the report's transaction
          yield* webhooks.emit("usage.threshold", {
            service_id: service.id,
            user_id: service.userId,
            threshold: percent,
            period: Bandwidth.labelOf(service.plan.usageReset, period.start),
            used_bytes: after,
            limit_bytes: limit
          })
        }
      })

    /** a 422 for every bad field of the report and of its `Idempotency-Key` */
    const checked = (payload: ReadonlyArray<unknown>, key: string | undefined, fields: CounterFields, distinct: boolean) =>
      Effect.gen(function*() {
        const report = checkReport(payload, fields, distinct)
        const errors = { ...idempotencyKeyErrors(key), ...report.errors }
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        return report.entries
      })

    /**
     * [D54]: a node's counter deltas, added to each owner's current service for its current period ([D95]).
     * [D94]: under an `Idempotency-Key`, a retry answers the first answer and adds nothing.
     */
    const record = (serverId: number, payload: ReadonlyArray<unknown>, key?: string) =>
      Effect.flatMap(checked(payload, key, DELTAS, false), (entries) =>
        reports.once(serverId, "usage", key, Effect.gen(function*() {
          const owners = yield* ownersOf(serverId, entries)
          const additions = entries.flatMap((e, index) => {
            const owner = owners[index]
            return owner === undefined ? [] : [{ index, owner, rx: e.rx, tx: e.tx }]
          })
          return yield* addToMonths(additions, DELTAS)
        }))).pipe(Effect.tap(() => webhooks.wake))

    /**
     * [D94]: a node's cumulative counters. The server keeps each peer's last totals (those of
     * every known peer, counted or not, so traffic outside a service is never billed later) and
     * adds what they grew by; a repeated report adds nothing, a lost one is covered by the next.
     */
    const recordCounters = (serverId: number, payload: ReadonlyArray<unknown>, key?: string) =>
      Effect.flatMap(checked(payload, key, TOTALS, true), (entries) =>
        reports.once(serverId, "counters", key, Effect.gen(function*() {
          const owners = yield* ownersOf(serverId, entries)
          const known = entries.flatMap((e, index) => {
            const owner = owners[index]
            if (owner === undefined) return []
            const [kind, peerKey] = e.public_key !== undefined ? ["public_key", e.public_key] as const : ["username", e.username ?? ""] as const
            return [{ index, owner, kind, peer_key: peerKey, rx_total: e.rx, tx_total: e.tx }]
          })
          if (known.length === 0) return { accepted: 0 }
          const totals = JSON.stringify(known.map(({ kind, peer_key, rx_total, tx_total }) => ({ kind, peer_key, rx_total, tx_total })))
          const rows = yield* Effect.orDie(advanceCounters({ serverId, now: yield* clock.now, totals }))
          const added = new Map(rows.map((r) => [`${r.kind}:${r.peer_key}`, r]))
          return yield* addToMonths(known.map((k) => {
            const row = added.get(`${k.kind}:${k.peer_key}`)!
            return { index: k.index, owner: k.owner, rx: row.rx_added, tx: row.tx_added }
          }), TOTALS)
        }))).pipe(Effect.tap(() => webhooks.wake))

    /**
     * [D70]: an admin adds bytes to a service's period: by default the current one ([D95]), else
     * the one starting in the month `YYYY-MM`; 422 past 2^53 - 1, nothing saved
     */
    const addToService = (serviceId: number, bytes: number, periodLabel: string | undefined) =>
      Effect.gen(function*() {
        const service = yield* orNotFound(yield* subscriptions.findById(serviceId))
        const anchor = { usageReset: service.plan.usageReset, startsAt: service.startsAt }
        const period = periodLabel !== undefined
          ? Bandwidth.periodInMonth(anchor, Bandwidth.parsePeriod(periodLabel)!)
          : periodOf(service, yield* clock.now).start
        const refused = ValidationError.field("bytes", pastMax("bytes"))
        const total = yield* sql.withTransaction(Effect.gen(function*() {
          if ((yield* month(service.id, period)) + bytes > MAX_BYTES) return yield* Effect.fail(refused)
          const written = yield* guardedUpsert({ serviceId: service.id, period, rx: bytes, tx: 0 }).pipe(Effect.orDie)
          return Option.isSome(written) ? written.value.used : yield* Effect.fail(refused)
        })).pipe(Effect.catchTag("SqlError", Effect.die))
        const recorded: typeof UsageRecorded.Type = {
          service_id: service.id,
          period: Bandwidth.labelOf(service.plan.usageReset, period),
          used_bytes: total,
          used_formatted: Bandwidth.formatBytes(total)
        }
        return recorded
      })

    const bandwidthOf = (service: Subscription) =>
      Effect.gen(function*() {
        const period = periodOf(service, yield* clock.now)
        const usedBytes = yield* month(service.id, period.start)
        const plan = service.plan
        return Bandwidth.usage({ usedBytes, bandwidthLimitGb: plan.bandwidthLimitGb, resetDate: period.next, quotaAction: plan.quotaAction })
      })

    const currentService = (userId: number) => Effect.flatMap(subscriptions.current(userId), orNotFound)

    return {
      /** adds the deltas to the period starting on `period` (`YYYY-MM-DD`) unchecked; its new total */
      add: (serviceId: number, period: string, rx: number, tx: number) =>
        upsert({ serviceId, period, rx, tx }).pipe(Effect.map((r) => r.used), Effect.orDie),
      month,
      periodTotals,
      currentTotals,
      periodOf,
      history,
      record,
      recordCounters,
      addToService,
      /** [D55]: the caller's service's month (404 for another user's) */
      ofService: (userId: number, serviceId: number) =>
        Effect.flatMap(Effect.flatMap(subscriptions.findOwned(userId, serviceId), orNotFound), bandwidthOf),
      /** [D55]: the current service's month (404 without one) */
      current: (userId: number) => Effect.flatMap(currentService(userId), bandwidthOf),
      /** [D55]: the current service's periods with usage, newest first, at most 12, labelled as [D95] says */
      historyOf: (userId: number): Effect.Effect<ReadonlyArray<Bandwidth.HistoryEntry>, NotFound> =>
        Effect.gen(function*() {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          return rows.slice(0, 12).map((m) => Bandwidth.historyEntry(Bandwidth.labelOf(service.plan.usageReset, m.period), m.usedBytes))
        }),
      /** [D55]: the current service's total and its current period's ([D95]) */
      summaryOf: (userId: number) =>
        Effect.gen(function*() {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          const period = periodOf(service, yield* clock.now).start
          const total = Math.min(MAX_BYTES, rows.reduce((sum, m) => sum + m.usedBytes, 0))
          return Bandwidth.summary(total, rows.find((m) => m.period === period)?.usedBytes ?? 0)
        })
    } as const
  }),
  dependencies: [Subscriptions.Default, Peers.Default, Credentials.Default, UsageReports.Default, Notifications.Default, Webhooks.Default]
}) {
  /** [D94]: the jobs' purge of `Idempotency-Key`s older than 24 h */
  static readonly purgeReports = UsageReports.purge
}
