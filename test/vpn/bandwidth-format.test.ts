import { describe, expect, test } from "bun:test"
import {
  anchorDaysStartingIn,
  formatBytes,
  isOverLimit,
  limitBytes,
  parsePeriod,
  periodAt,
  periodStart,
  resetDate,
  summary,
  usage
} from "../../src/vpn/Bandwidth.ts"

// [D55]: the pure arithmetic and formatting.
describe("formatBytes [D55]", () => {
  test("1024-based units with two decimals", () => {
    expect(formatBytes(0)).toBe("0.00 B")
    expect(formatBytes(1)).toBe("1.00 B")
    expect(formatBytes(1023)).toBe("1023.00 B")
    expect(formatBytes(1024)).toBe("1.00 KB")
    expect(formatBytes(1536)).toBe("1.50 KB")
    expect(formatBytes(1024 ** 2)).toBe("1.00 MB")
    expect(formatBytes(1.5 * 1024 ** 3)).toBe("1.50 GB")
    expect(formatBytes(1024 ** 4)).toBe("1.00 TB")
    expect(formatBytes(2048 * 1024 ** 4)).toBe("2048.00 TB")
  })

  test("a value that rounds up to 1024 moves to the next unit", () => {
    expect(formatBytes(1024 ** 2 - 1)).toBe("1.00 MB")
    expect(formatBytes(1024 * 1023.994)).toBe("1023.99 KB")
  })
})

describe("usage [D55]", () => {
  const now = new Date("2026-01-15T12:00:00Z")
  test("a limited plan", () => {
    expect(usage({ usedBytes: 1.5 * 1024 ** 3, bandwidthLimitGb: 100, resetDate: resetDate(now) })).toEqual({
      used_bytes: 1.5 * 1024 ** 3,
      limit_bytes: 100 * 1024 ** 3,
      used_formatted: "1.50 GB",
      limit_formatted: "100.00 GB",
      percentage: 1.5,
      unlimited: false,
      reset_date: "2026-02-01",
      throttled: false
    })
  })

  test("percentage has two decimals and may pass 100", () => {
    expect(usage({ usedBytes: 1024 ** 3 / 3, bandwidthLimitGb: 1, resetDate: resetDate(now) }).percentage).toBe(33.33)
    expect(usage({ usedBytes: (2 * 1024 ** 3) / 3, bandwidthLimitGb: 1, resetDate: resetDate(now) }).percentage).toBe(66.67)
    expect(usage({ usedBytes: 3 * 1024 ** 3, bandwidthLimitGb: 2, resetDate: resetDate(now) }).percentage).toBe(150)
  })

  test("an unlimited plan", () => {
    expect(usage({ usedBytes: 10, bandwidthLimitGb: 0, resetDate: resetDate(now) })).toEqual({
      used_bytes: 10,
      limit_bytes: null,
      used_formatted: "10.00 B",
      limit_formatted: "Unlimited",
      percentage: null,
      unlimited: true,
      reset_date: "2026-02-01",
      throttled: false
    })
    expect(limitBytes(0)).toBeNull()
    expect(isOverLimit(10 ** 15, 0)).toBe(false)
  })

  test("the limit is reached at exactly limit bytes", () => {
    expect(isOverLimit(1024 ** 3 - 1, 1)).toBe(false)
    expect(isOverLimit(1024 ** 3, 1)).toBe(true)
  })

  test("reset_date is the first day of next month in UTC, across the year end", () => {
    expect(resetDate(new Date("2026-12-31T23:59:59Z"))).toBe("2027-01-01")
    expect(resetDate(new Date("2026-01-31T23:30:00-02:00"))).toBe("2026-03-01")
    expect(periodStart(new Date("2026-03-31T23:59:59Z"))).toBe("2026-03-01")
  })

  test("periods", () => {
    expect(parsePeriod("2026-02")).toBe("2026-02-01")
    expect(parsePeriod("2026-13")).toBeUndefined()
    expect(parsePeriod("2026-2")).toBeUndefined()
    expect(parsePeriod("garbage")).toBeUndefined()
  })

  test("summary", () => {
    expect(summary(3 * 1024, 1024)).toEqual({
      total_used_bytes: 3072,
      total_used_formatted: "3.00 KB",
      current_month_bytes: 1024,
      current_month_formatted: "1.00 KB"
    })
  })
})

describe("quota periods, pure [D95]", () => {
  const at = (iso: string) => new Date(iso)
  test("billing_day clamps to the month's end and starts at 00:00 UTC of its day", () => {
    const anchor = { usageReset: "billing_day" as const, startsAt: at("2027-01-31T22:00:00Z") }
    expect(periodAt(anchor, at("2027-02-27T23:59:59Z"))).toEqual({ start: "2027-01-31", next: "2027-02-28" })
    expect(periodAt(anchor, at("2027-02-28T00:00:00Z"))).toEqual({ start: "2027-02-28", next: "2027-03-31" })
    expect(periodAt(anchor, at("2028-02-29T00:00:00Z"))).toEqual({ start: "2028-02-29", next: "2028-03-31" })
    expect(periodAt(anchor, at("2027-12-31T00:00:00Z"))).toEqual({ start: "2027-12-31", next: "2028-01-31" })
    expect(periodAt(anchor, at("2027-12-30T00:00:00Z"))).toEqual({ start: "2027-11-30", next: "2027-12-31" })
  })
  test("monthly and never", () => {
    expect(periodAt({ usageReset: "monthly", startsAt: at("2026-01-15T00:00:00Z") }, at("2026-12-31T23:00:00Z"))).toEqual({
      start: "2026-12-01",
      next: "2027-01-01"
    })
    expect(periodAt({ usageReset: "never", startsAt: at("2026-01-15T20:00:00Z") }, at("2029-06-01T00:00:00Z"))).toEqual({ start: "2026-01-15", next: null })
  })
  test("the anchor days whose periods start after one day up to another", () => {
    expect([...anchorDaysStartingIn("2026-07-19", "2026-07-20")]).toEqual([20])
    expect([...anchorDaysStartingIn("2026-07-20", "2026-07-20")]).toEqual([])
    expect([...anchorDaysStartingIn("2026-09-28", "2026-09-30")].sort((a, b) => a - b)).toEqual([29, 30, 31])
    expect([...anchorDaysStartingIn("2027-02-27", "2027-02-28")].sort((a, b) => a - b)).toEqual([28, 29, 30, 31])
  })
})
