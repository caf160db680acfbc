import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { MAX_CENTS } from "../catalog/Money.ts"
import { checkedField, label } from "../platform/Fields.ts"

/** cents back to the decimal string the wire carries (a typed client sends `250` cents as `"2.50"`) */
const centsToDecimal = (cents: number) => {
  const abs = Math.abs(cents)
  return `${cents < 0 ? "-" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`
}

const SIGNED = /^(-?)(\d{1,10})(?:\.(\d{1,2}))?$/

/** `"-5"`, `"12.5"`, `-5.25` -> signed cents; never through a float ([D32]) */
export const parseSignedCents = (input: unknown): Either.Either<number, "format"> => {
  const text = typeof input === "number" ? (Number.isFinite(input) ? String(input) : "") : typeof input === "string" ? input.trim() : ""
  const match = SIGNED.exec(text)
  if (match === null) return Either.left("format")
  const cents = Number(match[2]) * 100 + Number((match[3] ?? "").padEnd(2, "0"))
  if (cents > MAX_CENTS) return Either.left("format")
  return Either.right(match[1] === "-" ? -cents : cents)
}

/** [D109]: a signed amount in cents (a decimal string or number with at most two decimals), not 0.00 */
export const signedAmount = (field: string) =>
  checkedField(
    Schema.Int,
    (input) =>
      Either.flatMap(
        Either.mapLeft(parseSignedCents(input), () => `The ${label(field)} field must be a decimal number with at most two decimals.`),
        (cents) => (cents === 0 ? Either.left(`The ${label(field)} field must not be zero.`) : Either.right(cents))
      ),
    {
      oneOf: [
        { type: "string", pattern: "^-?\\d{1,10}(\\.\\d{1,2})?$", examples: ["5.00"] },
        { type: "number", examples: [5] }
      ]
    },
    centsToDecimal
  )

/** [D110]: a positive amount in cents */
export const positiveAmount = (field: string) =>
  checkedField(
    Schema.Int,
    (input) =>
      Either.flatMap(
        Either.mapLeft(parseSignedCents(input), () => `The ${label(field)} field must be a decimal number with at most two decimals.`),
        (cents) => (cents <= 0 ? Either.left(`The ${label(field)} field must be greater than 0.00.`) : Either.right(cents))
      ),
    {
      oneOf: [
        { type: "string", pattern: "^\\d{1,10}(\\.\\d{1,2})?$", examples: ["1.00"] },
        { type: "number", minimum: 0.01, examples: [1] }
      ]
    },
    centsToDecimal
  )

/** A three-letter currency code, upper-cased (`usd` -> `USD`). */
export const currencyCode = (field: string) =>
  checkedField(
    Schema.String,
    (input) =>
      typeof input === "string" && /^[A-Za-z]{3}$/.test(input.trim())
        ? Either.right(input.trim().toUpperCase())
        : Either.left(`The ${label(field)} field must be a 3-letter currency code.`),
    { type: "string", pattern: "^[A-Za-z]{3}$" }
  )
