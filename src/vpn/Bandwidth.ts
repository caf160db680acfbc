import * as Schema from "effect/Schema"

/**
 * The bandwidth arithmetic of [D55], pure: byte counts in, the spec's fields out.
 * Months are UTC calendar months; sizes use 1024-based units with two decimals.
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
export const limitBytes = (bandwidthLimitGb: number): number | null => bandwidthLimitGb === 0 ? null : bandwidthLimitGb * GIB

/** Whether a month's usage has reached the plan's limit (never on an unlimited plan). */
export const isOverLimit = (usedBytes: number, bandwidthLimitGb: number): boolean => {
  const limit = limitBytes(bandwidthLimitGb)
  return limit !== null && usedBytes >= limit
}

/** The first day of the month of `date`, UTC, as `YYYY-MM-DD` (the `period` column). */
export const periodStart = (date: Date): string =>
  new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)).toISOString().slice(0, 10)

/** `YYYY-MM` of a period date (or of any date). */
export const periodLabel = (date: Date | string): string =>
  typeof date === "string" ? date.slice(0, 7) : periodStart(date).slice(0, 7)

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
export const resetDate = (now: Date): string =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 10)

/** A service's month as the spec shows it ([D55]). */
export const BandwidthUsage = Schema.Struct({
  used_bytes: Schema.Int,
  limit_bytes: Schema.NullOr(Schema.Int),
  used_formatted: Schema.String,
  limit_formatted: Schema.String,
  percentage: Schema.NullOr(Schema.Number),
  unlimited: Schema.Boolean,
  reset_date: Schema.String
}).annotations({ identifier: "BandwidthUsage" })
export type BandwidthUsage = typeof BandwidthUsage.Type

/** Two decimals, as a number. */
const round2 = (n: number) => Math.round(n * 100) / 100

export const usage = (options: { readonly usedBytes: number; readonly bandwidthLimitGb: number; readonly now: Date }): BandwidthUsage => {
  const limit = limitBytes(options.bandwidthLimitGb)
  return {
    used_bytes: options.usedBytes,
    limit_bytes: limit,
    used_formatted: formatBytes(options.usedBytes),
    limit_formatted: limit === null ? "Unlimited" : formatBytes(limit),
    percentage: limit === null ? null : round2((options.usedBytes / limit) * 100),
    unlimited: limit === null,
    reset_date: resetDate(options.now)
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
