/**
 * [D108] The money of a plan change, in integer cents, fractions of a cent rounded down ([§15]).
 * Pure: the property tests drive it directly, the routes through `PlanChanges`.
 */

export type ChangeKind = "upgrade" | "downgrade"

/** an upgrade when the new cycle's price per day is higher: compared as integers, no division */
export const changeKind = (current: { priceCents: number; days: number }, next: { priceCents: number; days: number }): ChangeKind =>
  BigInt(next.priceCents) * BigInt(current.days) > BigInt(current.priceCents) * BigInt(next.days) ? "upgrade" : "downgrade"

export interface Prorated {
  /** what the unused part of the paid period is worth */
  readonly creditCents: number
  /** the new cycle's price less the credit, never below 0 */
  readonly amountDueCents: number
  /** the credit above the price: it goes to the balance ([D109]) */
  readonly excessCents: number
}

/**
 * credit = paid x unused seconds / the period's seconds, rounded down; a period not yet started
 * counts whole, one already over counts nothing.
 */
export const prorate = (input: {
  readonly paidCents: number
  readonly periodStart: Date
  readonly periodEnd: Date
  readonly now: Date
  readonly priceCents: number
}): Prorated => {
  const total = Math.floor(input.periodEnd.getTime() / 1000) - Math.floor(input.periodStart.getTime() / 1000)
  const unused = Math.min(total, Math.max(0, Math.floor(input.periodEnd.getTime() / 1000) - Math.floor(input.now.getTime() / 1000)))
  const creditCents = total <= 0 || input.paidCents <= 0 ? 0 : Number((BigInt(input.paidCents) * BigInt(unused)) / BigInt(total))
  return {
    creditCents,
    amountDueCents: Math.max(0, input.priceCents - creditCents),
    excessCents: Math.max(0, creditCents - input.priceCents)
  }
}
