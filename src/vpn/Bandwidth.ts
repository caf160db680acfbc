import * as Schema from "effect/Schema"
import type { UsageReset } from "../catalog/Domain.ts"

/**
 * The bandwidth arithmetic of [D55], pure: byte counts in, the spec's fields out.
 * Periods follow the plan's `usage_reset` ([D95]); sizes use 1024-based units with two decimals.
 */

/** [D54] (rev. 2): every byte count the API shows is a safe integer. */
export const MAX_BYTES = Number.MAX_SAFE_INTEGER

const UNITS = ["B", "KB", "MB", "GB", "TB"] as const
export const GIB = 1024 ** 3

/** `1.50 GB`, `0.00 B`: the largest 1024-based unit not above the value (TB at most). */
export const formatBytes = (bytes: number): string => {
  let unit = 0
  let value = Math.max(0, bytes)
  while (unit < UNITS.length - 1 && value >= 1024) {
    value /= 1024
    unit++
  }
  // 1023.999 KB would print as "1024.00 KB": carry into the next unit instead
  if (unit < UNITS.length - 1 && Number(value.toFixed(2)) >= 1024) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(2)} ${UNITS[unit]}`
}

/** `bandwidth_limit_gb × 1024³`, or null when the plan is unlimited (0, [D31]). */
export const limitBytes = (bandwidthLimitGb: number): number | null => (bandwidthLimitGb === 0 ? null : bandwidthLimitGb * GIB)

/** Whether a month's usage has reached the plan's limit (never on an unlimited plan). */
export const isOverLimit = (usedBytes: number, bandwidthLimitGb: number): boolean => {
  const limit = limitBytes(bandwidthLimitGb)
  return limit !== null && usedBytes >= limit
}

/** The first day of the month of `date`, UTC, as `YYYY-MM-DD` (a `monthly` period's start). */
export const periodStart = (date: Date): string => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)).toISOString().slice(0, 10)

/** `YYYY-MM` of a period date (or of any date). */
export const periodLabel = (date: Date | string): string => (typeof date === "string" ? date.slice(0, 7) : periodStart(date).slice(0, 7))

/** `YYYY-MM` -> `YYYY-MM-01`, or undefined when it is not a real month. */
export const parsePeriod = (text: string): string | undefined => {
  const match = /^(\d{4})-(\d{2})$/.exec(text)
  if (!match) return undefined
  const month = Number(match[2])
  const year = Number(match[1])
  if (month < 1 || month > 12 || year < 1970) return undefined
  return `${match[1]}-${match[2]}-01`
}

/** The first day of the next month (UTC), `YYYY-MM-DD`. */
export const resetDate = (now: Date): string => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)

// ---- quota periods ([D95]) -------------------------------------------------------------

/** What a service's periods depend on: its plan's reset kind and the service's start. */
export interface PeriodAnchor {
  readonly usageReset: UsageReset
  readonly startsAt: Date
}

/** A period: its start date (the `usage_records.period` it is kept under) and the next one's (null: never). */
export interface Period {
  readonly start: string
  readonly next: string | null
}

const ymd = (year: number, month: number, day: number) => new Date(Date.UTC(year, month, day)).toISOString().slice(0, 10)
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month + 1, 0)).getUTCDate()

/** The day `anchorDay` of the month (`month` may run past 11 or below 0), clamped to its last day. */
const anchored = (year: number, month: number, anchorDay: number) => {
  const first = new Date(Date.UTC(year, month, 1))
  const y = first.getUTCFullYear()
  const m = first.getUTCMonth()
  return ymd(y, m, Math.min(anchorDay, daysIn(y, m)))
}

/**
 * [D95]: the period of a service at `now`. `monthly`: the UTC calendar month. `billing_day`: from
 * the day of the month the service started (clamped to a month's last day: a service started on
 * the 31st has periods starting Feb 28/29, Mar 31, Apr 30 ...) to the same day next month.
 * `never`: one period from the service's start date, with no next one.
 */
export const periodAt = (anchor: PeriodAnchor, now: Date): Period => {
  const today = now.toISOString().slice(0, 10)
  switch (anchor.usageReset) {
    case "monthly":
      return { start: periodStart(now), next: resetDate(now) }
    case "never":
      return { start: anchor.startsAt.toISOString().slice(0, 10), next: null }
    case "billing_day": {
      const day = anchor.startsAt.getUTCDate()
      const y = now.getUTCFullYear()
      const m = now.getUTCMonth()
      const thisMonth = anchored(y, m, day)
      return thisMonth <= today ? { start: thisMonth, next: anchored(y, m + 1, day) } : { start: anchored(y, m - 1, day), next: thisMonth }
    }
  }
}

/** [D70]: the service's period that starts in the month `YYYY-MM-01` (for `never`: its one period). */
export const periodInMonth = (anchor: PeriodAnchor, monthStart: string): string => {
  switch (anchor.usageReset) {
    case "monthly":
      return monthStart
    case "never":
      return anchor.startsAt.toISOString().slice(0, 10)
    case "billing_day":
      return anchored(Number(monthStart.slice(0, 4)), Number(monthStart.slice(5, 7)) - 1, anchor.startsAt.getUTCDate())
  }
}

/**
 * [D95]: how a period is named in history, admin answers and notices: `YYYY-MM` for calendar
 * months (as before), the start date `YYYY-MM-DD` for `billing_day` and `never` periods.
 */
export const labelOf = (usageReset: UsageReset, start: string): string => (usageReset === "monthly" ? start.slice(0, 7) : start)

/**
 * [D92], [D95]: the days of the month (1..31) a `billing_day` service may have started on for a
 * period of it to start on one of the days after `from` up to `to` (`YYYY-MM-DD`, UTC).
 */
export const anchorDaysStartingIn = (from: string, to: string): ReadonlySet<number> => {
  const days = new Set<number>()
  const end = new Date(`${to}T00:00:00Z`)
  for (let d = new Date(`${from}T00:00:00Z`); d < end && days.size < 31; ) {
    d = new Date(d.getTime() + 86_400_000)
    const last = daysIn(d.getUTCFullYear(), d.getUTCMonth())
    for (let anchor = d.getUTCDate(); anchor <= (d.getUTCDate() === last ? 31 : d.getUTCDate()); anchor++) days.add(anchor)
  }
  return days
}

/** A service's month as the spec shows it ([D55]). */
export const BandwidthUsage = Schema.Struct({
  used_bytes: Schema.Int,
  limit_bytes: Schema.NullOr(Schema.Int),
  used_formatted: Schema.String,
  limit_formatted: Schema.String,
  percentage: Schema.NullOr(Schema.Number),
  unlimited: Schema.Boolean,
  /** [D95]: the next period's start; null when the quota never resets */
  reset_date: Schema.NullOr(Schema.String),
  /** [D104]: over the quota of a `throttle` plan (devices connected at the throttle speed) */
  throttled: Schema.Boolean
}).annotations({ identifier: "BandwidthUsage" })
export type BandwidthUsage = typeof BandwidthUsage.Type

/** Two decimals, as a number. */
const round2 = (n: number) => Math.round(n * 100) / 100

export const usage = (options: {
  readonly usedBytes: number
  readonly bandwidthLimitGb: number
  readonly resetDate: string | null
  /** [D104]: the plan's `quota_action` (default `suspend`) */
  readonly quotaAction?: "suspend" | "throttle"
}): BandwidthUsage => {
  const limit = limitBytes(options.bandwidthLimitGb)
  return {
    used_bytes: options.usedBytes,
    limit_bytes: limit,
    used_formatted: formatBytes(options.usedBytes),
    limit_formatted: limit === null ? "Unlimited" : formatBytes(limit),
    percentage: limit === null ? null : round2((options.usedBytes / limit) * 100),
    unlimited: limit === null,
    reset_date: options.resetDate,
    throttled: options.quotaAction === "throttle" && isOverLimit(options.usedBytes, options.bandwidthLimitGb)
  }
}

export const HistoryEntry = Schema.Struct({
  period: Schema.String,
  used_bytes: Schema.Int,
  used_formatted: Schema.String
}).annotations({ identifier: "BandwidthHistoryEntry" })
export type HistoryEntry = typeof HistoryEntry.Type

export const historyEntry = (period: string, usedBytes: number): HistoryEntry => ({
  period,
  used_bytes: usedBytes,
  used_formatted: formatBytes(usedBytes)
})

export const BandwidthSummary = Schema.Struct({
  total_used_bytes: Schema.Int,
  total_used_formatted: Schema.String,
  current_month_bytes: Schema.Int,
  current_month_formatted: Schema.String
}).annotations({ identifier: "BandwidthSummary" })
export type BandwidthSummary = typeof BandwidthSummary.Type

export const summary = (totalBytes: number, currentMonthBytes: number): BandwidthSummary => ({
  total_used_bytes: totalBytes,
  total_used_formatted: formatBytes(totalBytes),
  current_month_bytes: currentMonthBytes,
  current_month_formatted: formatBytes(currentMonthBytes)
})
