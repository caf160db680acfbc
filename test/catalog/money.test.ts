import { describe, expect, test } from "bun:test"
import { Option } from "effect"
import { applyDiscount, formatCents, parseCents, toCents } from "../../src/catalog/Money.ts"

// [D32] exact money: integer cents, two-decimal strings, half-up on the discount.
describe("Money [D32]", () => {
  test("parses decimal strings and JSON numbers without floats", () => {
    expect(parseCents("9.99")).toEqual(Option.some(999))
    expect(parseCents(9.99)).toEqual(Option.some(999))
    expect(parseCents("0.1")).toEqual(Option.some(10))
    expect(parseCents(0.1)).toEqual(Option.some(10))
    expect(parseCents("10")).toEqual(Option.some(1000))
    expect(parseCents("9999999999.99")).toEqual(Option.some(999_999_999_999))
    expect(parseCents(1.005)).toEqual(Option.none())
    for (const bad of ["9.999", "-1", "1e3", "", "abc", "1.", ".5", "99999999999"]) expect(parseCents(bad)).toEqual(Option.none())
    expect(parseCents(-1)).toEqual(Option.none())
    expect(parseCents(Number.NaN)).toEqual(Option.none())
    expect(parseCents(1e21)).toEqual(Option.none())
    expect(toCents("1234.50")).toBe(123450)
  })

  test("formats two decimals", () => {
    expect(formatCents(0)).toBe("0.00")
    expect(formatCents(5)).toBe("0.05")
    expect(formatCents(999)).toBe("9.99")
    expect(formatCents(100000)).toBe("1000.00")
    expect(formatCents(999_999_999_999)).toBe("9999999999.99")
  })

  test("percentage discounts round half-up to the cent", () => {
    expect(applyDiscount(5, "percentage", "50")).toEqual({ discount: 3, amount: 2 }) // 2.5 -> 3
    expect(applyDiscount(999, "percentage", "12.5")).toEqual({ discount: 125, amount: 874 }) // 124.875 -> 125
    expect(applyDiscount(999, "percentage", "20")).toEqual({ discount: 200, amount: 799 }) // 199.8 -> 200
    expect(applyDiscount(1000, "percentage", "33.33")).toEqual({ discount: 333, amount: 667 }) // 333.3 -> 333
    expect(applyDiscount(999, "percentage", "100")).toEqual({ discount: 999, amount: 0 })
    expect(applyDiscount(999, "percentage", "0")).toEqual({ discount: 0, amount: 999 })
    expect(applyDiscount(999_999_999_999, "percentage", "99.99").amount).toBe(100_000_000) // 999999999999*0.0001 = 99999999.9999 -> 100000000
  })

  test("fixed discounts never take the price below 0.00", () => {
    expect(applyDiscount(999, "fixed", "5")).toEqual({ discount: 500, amount: 499 })
    expect(applyDiscount(999, "fixed", "20.00")).toEqual({ discount: 999, amount: 0 })
    expect(applyDiscount(0, "fixed", "1")).toEqual({ discount: 0, amount: 0 })
  })
})
