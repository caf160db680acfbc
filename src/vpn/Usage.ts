import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { DomainEvents } from "../events/DomainEvents.ts"
import { Services as Subscriptions } from "../services/Services.ts"
import type { ServiceQuota, Subscription } from "../services/Domain.ts"
import { AppClock } from "../platform/Clock.ts"
import { NotFound, orNotFound, ValidationError } from "../platform/Errors.ts"
import * as Bandwidth from "./Bandwidth.ts"
import { crossedThresholds, QuotaNotices } from "./QuotaNotices.ts"
import { type Addition, checkReport, type CounterFields, DELTAS, firstPastMax, pastMax, TOTALS } from "./ReportCheck.ts"
import { ReportOwners } from "./ReportOwners.ts"
import { idempotencyKeyErrors, UsageReports } from "./UsageReports.ts"
import { UsageRows } from "./UsageRows.ts"
import { UsageRecorded } from "./Domain.ts"
import { ServerId, ServiceId, UserId } from "../platform/Ids.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { UsageRecorded }

const MAX_BYTES = Bandwidth.MAX_BYTES

/** What a report adds to one service's period. */
interface Sum {
  readonly service: ServiceQuota
  readonly period: Bandwidth.Period
  /** the additions' bytes: exact while rx + tx stays within 2^53 - 1 (each addition is), at least 2^53 past it */
  rx: number
  tx: number
  readonly additions: Array<Addition>
}

/** [D95]: the current period of each service at `now`, computed once per plan kind and anchor */
const periodsAt = (now: Date) => {
  const known = new Map<string, Bandwidth.Period>()
  return (service: ServiceQuota): Bandwidth.Period => {
    const reset = service.plan.usageReset
    const key = reset === "monthly" ? reset : `${reset}:${service.startsAt.getTime()}`
    let period = known.get(key)
    if (period === undefined) known.set(key, (period = Bandwidth.periodAt({ usageReset: reset, startsAt: service.startsAt }, now)))
    return period
  }
}

/**
 * Usage per service per quota period ([D55], [D95]: keyed by the period's start date). Additions are upserts, so concurrent
 * reports add up exactly; no total ever passes 2^53 - 1 through the API ([D54]); a node's
 * report is counted once ([D94]).
 */
export class Usage extends Effect.Service<Usage>()("vpn/Usage", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const subscriptions = yield* Subscriptions
    const owners = yield* ReportOwners
    const reports = yield* UsageReports
    const domainEvents = yield* DomainEvents
    const usageRows = yield* UsageRows
    const { quotaNotices } = yield* QuotaNotices
    const { history, month, periodTotals } = usageRows

    /** [D95]: each service's current period (of its plan's reset kind) at `now` */
    const periodOf = (service: Pick<Subscription, "startsAt" | "plan">, now: Date) =>
      Bandwidth.periodAt({ usageReset: service.plan.usageReset, startsAt: service.startsAt }, now)
    /** [D95]: the bytes of each service's current period, by service id */
    const currentTotals = (services: ReadonlyArray<Pick<Subscription, "id" | "startsAt" | "plan">>) =>
      Effect.flatMap(clock.now, (now) => periodTotals(services.map((s) => ({ serviceId: s.id, period: periodOf(s, now).start }))))

    /**
     * Adds a report's entries to each owner's current service for its current period ([D95]), all or nothing:
     * a report that would carry any period past 2^53 - 1 is refused whole (422), nothing written
     * ([D54] rev. 2). The sums are written in one statement in service-id order (concurrent
     * reports take their row locks in one order), each only if it keeps its period within the
     * bound, and the statement returns the new totals: the bytes before are the new total less the
     * sum, exact whatever other reports did meanwhile, with no read of the totals first (issue 27).
     * Entries of owners without a current service are not counted. Runs in the report's transaction.
     */
    const addToMonths = (additions: ReadonlyArray<Addition>, fields: CounterFields) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const current = yield* subscriptions.currentQuotasOf(additions.map((a) => a.owner))
        const periodAt = periodsAt(now)
        const sums = new Map<ServiceId, Sum>()
        for (const addition of additions) {
          const service = current.get(addition.owner)
          if (service === undefined) continue
          let sum = sums.get(service.id)
          if (sum === undefined) sums.set(service.id, (sum = { service, period: periodAt(service), rx: 0, tx: 0, additions: [] }))
          sum.rx += addition.rx
          sum.tx += addition.tx
          sum.additions.push(addition)
        }
        if (sums.size === 0) return { accepted: 0 }
        // a sum past the bound by itself is refused whatever its period holds
        const all = [...sums.values()]
        if (all.some((sum) => sum.rx + sum.tx > MAX_BYTES)) return yield* refuse(sums, [...sums.keys()], fields, false)
        const rows = all.map((sum) => ({ service_id: sum.service.id, period: sum.period.start, rx: sum.rx, tx: sum.tx }))
        const totals = yield* Effect.orDie(usageRows.guardedUpsertAll({ sums: JSON.stringify(rows) }))
        if (totals.length < sums.size) {
          // the statement kept the rows it did not write locked: their totals are the ones it refused
          const written = new Set(totals.map((r) => r.service_id))
          return yield* refuse(
            sums,
            [...sums.keys()].filter((id) => !written.has(id)),
            fields,
            true
          )
        }
        // [D96]: a period moved across 80 % or 100 % of its quota: one notice each, in this transaction
        for (const total of totals) {
          const sum = sums.get(total.service_id)!
          const before = total.used - sum.rx - sum.tx
          if (crossedThresholds(sum.service.plan.bandwidthLimitGb, before, total.used).length > 0) {
            yield* quotaNotices(sum.service, sum.period, before, total.used)
          }
        }
        return { accepted: all.reduce((n, sum) => n + sum.additions.length, 0) }
      })

    /**
     * [D54] rev. 2: the 422 of a report that would carry some of these services' periods past
     * 2^53 - 1, each naming the counter whose addition first passes it, in report order.
     * `refusedByDatabase`: the upsert refused each of them (a total stored past the bound by hand
     * refuses even zeros: then the service's last entry is named).
     */
    const refuse = (sums: ReadonlyMap<ServiceId, Sum>, ids: ReadonlyArray<ServiceId>, fields: CounterFields, refusedByDatabase: boolean) =>
      Effect.gen(function* () {
        const stored = yield* periodTotals(ids.map((id) => ({ serviceId: id, period: sums.get(id)!.period.start })))
        const errors: Record<string, Array<string>> = {}
        for (const id of ids) {
          const { additions } = sums.get(id)!
          const field = firstPastMax(stored.get(id) ?? 0, additions, fields) ?? (refusedByDatabase ? `${additions.at(-1)!.index}.${fields[0]}` : undefined)
          if (field !== undefined) errors[field] = [pastMax(field)]
        }
        return yield* Effect.fail(new ValidationError({ errors }))
      })

    /** a 422 for every bad field of the report and of its `Idempotency-Key` */
    const checked = (payload: ReadonlyArray<unknown>, key: string | undefined, fields: CounterFields, distinct: boolean) =>
      Effect.gen(function* () {
        const report = checkReport(payload, fields, distinct)
        const errors = { ...idempotencyKeyErrors(key), ...report.errors }
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        return report.entries
      })

    /**
     * [D54]: a node's counter deltas, added to each owner's current service for its current period ([D95]);
     * [D116]: only the entries this node's server serves.
     * [D94]: under an `Idempotency-Key`, a retry answers the first answer and adds nothing.
     */
    const record = (serverId: ServerId, payload: ReadonlyArray<unknown>, key?: string) =>
      Effect.flatMap(checked(payload, key, DELTAS, false), (entries) =>
        reports.once(
          serverId,
          "usage",
          key,
          Effect.gen(function* () {
            const served = yield* owners.ownersOf(serverId, entries)
            const additions = entries.flatMap((e, index) => {
              const owner = served[index]
              return owner === undefined ? [] : [{ index, owner, rx: e.rx, tx: e.tx }]
            })
            const answer = yield* addToMonths(additions, DELTAS)
            // issue 34, [D107]: each device's bytes too, in the same transaction (counted once, [D94]),
            // as a counters report's are: every entry this server serves
            const deltas = entries.flatMap((e, index) =>
              served[index] === undefined
                ? []
                : [
                    e.public_key !== undefined
                      ? { kind: "public_key", peer_key: e.public_key, rx: e.rx, tx: e.tx }
                      : { kind: "username", peer_key: e.username ?? "", rx: e.rx, tx: e.tx }
                  ]
            )
            if (deltas.length > 0) {
              yield* Effect.orDie(usageRows.addDeviceDeltas({ serverId, now: yield* clock.now, deltas: JSON.stringify(deltas) }))
            }
            return answer
          })
        )
      ).pipe(Effect.tap(() => domainEvents.wake))

    /**
     * [D94]: a node's cumulative counters. The server keeps each peer's last totals (those of
     * every known peer, counted or not, so traffic outside a service is never billed later) and
     * adds what they grew by; a repeated report adds nothing, a lost one is covered by the next.
     */
    const recordCounters = (serverId: ServerId, payload: ReadonlyArray<unknown>, key?: string) =>
      Effect.flatMap(checked(payload, key, TOTALS, true), (entries) =>
        reports.once(
          serverId,
          "counters",
          key,
          Effect.gen(function* () {
            const served = yield* owners.ownersOf(serverId, entries)
            const known = entries.flatMap((e, index) => {
              const owner = served[index]
              if (owner === undefined) return []
              const [kind, peerKey] = e.public_key !== undefined ? (["public_key", e.public_key] as const) : (["username", e.username ?? ""] as const)
              return [{ index, owner, kind, peer_key: peerKey, rx_total: e.rx, tx_total: e.tx }]
            })
            if (known.length === 0) return { accepted: 0 }
            const totals = JSON.stringify(known.map(({ kind, peer_key, rx_total, tx_total }) => ({ kind, peer_key, rx_total, tx_total })))
            const rows = yield* Effect.orDie(usageRows.advanceCounters({ serverId, now: yield* clock.now, totals }))
            const added = new Map(rows.map((r) => [`${r.kind}:${r.peer_key}`, r]))
            return yield* addToMonths(
              known.map((k) => {
                const row = added.get(`${k.kind}:${k.peer_key}`)!
                return { index: k.index, owner: k.owner, rx: row.rx_added, tx: row.tx_added }
              }),
              TOTALS
            )
          })
        )
      ).pipe(Effect.tap(() => domainEvents.wake))

    /**
     * [D70]: an admin adds bytes to a service's period: by default the current one ([D95]), else
     * the one starting in the month `YYYY-MM`; 422 past 2^53 - 1, nothing saved
     */
    const addToService = (serviceId: ServiceId, bytes: number, periodLabel: string | undefined) =>
      Effect.gen(function* () {
        const service = yield* orNotFound(yield* subscriptions.findById(serviceId))
        const anchor = { usageReset: service.plan.usageReset, startsAt: service.startsAt }
        const current = periodOf(service, yield* clock.now)
        const period = periodLabel !== undefined ? Bandwidth.periodInMonth(anchor, Bandwidth.parsePeriod(periodLabel)!) : current.start
        const refused = ValidationError.field("bytes", pastMax("bytes"))
        const total = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              if ((yield* month(service.id, period)) + bytes > MAX_BYTES) return yield* Effect.fail(refused)
              // [D122]: a sum without a direction, kept as sent (a subscription link shows it as download)
              const written = yield* usageRows.guardedUpsert({ serviceId: service.id, period, rx: 0, tx: bytes }).pipe(Effect.orDie)
              if (Option.isNone(written)) return yield* Effect.fail(refused)
              // [D117]: the notices of [D96] follow the admin's bytes too (those of the current period:
              // an old period's quota no longer limits anything); the row's own total, so the bytes
              // before this addition are exact even with concurrent writers
              const after = written.value.used
              if (period === current.start) yield* quotaNotices(service, current, after - bytes, after)
              return after
            })
          )
          .pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.tap(() => domainEvents.wake)
          )
        const recorded: typeof UsageRecorded.Type = {
          service_id: service.id,
          period: Bandwidth.labelOf(service.plan.usageReset, period),
          used_bytes: total,
          used_formatted: Bandwidth.formatBytes(total)
        }
        return recorded
      })

    const bandwidthOf = (service: Subscription) =>
      Effect.gen(function* () {
        const period = periodOf(service, yield* clock.now)
        const usedBytes = yield* month(service.id, period.start)
        const plan = service.plan
        return Bandwidth.usage({ usedBytes, bandwidthLimitGb: plan.bandwidthLimitGb, resetDate: period.next, quotaAction: plan.quotaAction })
      })

    const currentService = (userId: UserId) => Effect.flatMap(subscriptions.current(userId), orNotFound)

    return {
      /** adds the deltas to the period starting on `period` (`YYYY-MM-DD`) unchecked; its new total */
      add: usageRows.add,
      month,
      periodTotals,
      currentTotals,
      /**
       * [D122]: the service's current period ([D95]) as the node counted it: `upload` what the
       * server received from the devices, `download` what it sent them (an admin's bytes are a
       * sum without a direction: they are kept as sent, so `upload` stays 0 for them)
       */
      currentSplit: (service: Pick<Subscription, "id" | "startsAt" | "plan">) =>
        Effect.flatMap(clock.now, (now) => Effect.map(usageRows.split(service.id, periodOf(service, now).start), (r) => ({ upload: r.rx, download: r.tx }))),
      periodOf,
      history,
      record,
      recordCounters,
      addToService,
      /** [D55]: the caller's service's month (404 for another user's) */
      ofService: (userId: UserId, serviceId: ServiceId) => Effect.flatMap(Effect.flatMap(subscriptions.findOwned(userId, serviceId), orNotFound), bandwidthOf),
      /** [D55]: the current service's month (404 without one) */
      current: (userId: UserId) => Effect.flatMap(currentService(userId), bandwidthOf),
      /** [D55]: the current service's periods with usage, newest first, at most 12, labelled as [D95] says */
      historyOf: (userId: UserId): Effect.Effect<ReadonlyArray<Bandwidth.HistoryEntry>, NotFound> =>
        Effect.gen(function* () {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          return rows.slice(0, 12).map((m) => Bandwidth.historyEntry(Bandwidth.labelOf(service.plan.usageReset, m.period), m.usedBytes))
        }),
      /** [D55]: the current service's total and its current period's ([D95]) */
      summaryOf: (userId: UserId) =>
        Effect.gen(function* () {
          const service = yield* currentService(userId)
          const rows = yield* history(service.id)
          const period = periodOf(service, yield* clock.now).start
          const total = Math.min(
            MAX_BYTES,
            rows.reduce((sum, m) => sum + m.usedBytes, 0)
          )
          return Bandwidth.summary(total, rows.find((m) => m.period === period)?.usedBytes ?? 0)
        })
    } as const
  }),
  dependencies: [Subscriptions.Default, ReportOwners.Default, UsageReports.Default, UsageRows.Default, QuotaNotices.Default]
}) {
  /** [D94]: the jobs' purge of `Idempotency-Key`s older than 24 h */
  static readonly purgeReports = UsageReports.purge
}
