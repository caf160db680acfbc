import * as Option from "effect/Option"
import type { DiscountType } from "./Domain.ts"

/**
 * Money of [D32]: integer cents in memory, `numeric(12,2)` in the database, strings with two
 * decimals on the wire. Nothing here goes through a float: decimals are parsed as text, and
 * percentages are integer basis points (hundredths of a percent).
 */

/** The largest amount `numeric(12,2)` holds, in cents. */
export const MAX_CENTS = 999_999_999_999

const DECIMAL = /^(\d{1,10})(?:\.(\d{1,2}))?$/

/** `"9.99"`, `"10"`, `"0.5"`, `9.99` -> cents; anything else (negative, 3 decimals, text) is none. */
export const parseCents = (value: string | number): Option.Option<number> => {
  // a JSON number's shortest form is its decimal text: 9.99 prints "9.99", 1e21 prints "1e+21"
  const text = typeof value === "number" ? (Number.isFinite(value) ? String(value) : "") : value.trim()
  const match = DECIMAL.exec(text)
  if (!match) return Option.none()
  const cents = Number(match[1]) * 100 + Number((match[2] ?? "").padEnd(2, "0"))
  return cents <= MAX_CENTS ? Option.some(cents) : Option.none()
}

/** Cents of a decimal the database returned (`numeric` comes back as `"9.99"`). */
export const toCents = (value: string | number): number => Option.getOrThrowWith(parseCents(value), () => new Error(`not an amount: ${String(value)}`))

/** `999` -> `"9.99"` */
export const formatCents = (cents: number): string => {
  const whole = Math.floor(cents / 100)
  const rest = cents % 100
  return `${whole}.${rest.toString().padStart(2, "0")}`
}

/** `"9.9"` -> `"9.90"`: a decimal normalised to two places. */
export const normalizeAmount = (value: string | number): string => formatCents(toCents(value))

/** A percentage (`"12.5"`, `12.5`, `"100.00"`) in basis points: 12.5% -> 1250. */
export const toBasisPoints = (value: string | number): number => toCents(value)

export interface Discounted {
  readonly discount: number
  readonly amount: number
}

/** round(a / b) with halves up, for non-negative integers, exactly (bigint). */
const divideHalfUp = (a: bigint, b: bigint): bigint => (a * 2n + b) / (b * 2n)

/**
 * [D32] [D33]: the discount is rounded half-up to the cent; the price less that discount is
 * the amount, never below zero. `value` is the promo's value as stored (percent or amount).
 */
export const applyDiscount = (priceCents: number, type: DiscountType, value: string | number): Discounted => {
  const discount = type === "percentage" ? Number(divideHalfUp(BigInt(priceCents) * BigInt(toBasisPoints(value)), 10_000n)) : toCents(value)
  const capped = Math.min(discount, priceCents)
  return { discount: capped, amount: priceCents - capped }
}
