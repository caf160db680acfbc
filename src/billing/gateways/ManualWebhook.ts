import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { constantTimeEqual, hmacSha256Hex } from "../../platform/Crypto.ts"
import { InvalidSignature, NotFound, ValidationError } from "../../platform/Errors.ts"
import { parseCents } from "../../catalog/Money.ts"
import { requiredMessage } from "../../platform/Fields.ts"
import { PaymentEvent } from "../Domain.ts"

/** [D40]: a signature is good this long either side of now */
export const SIGNATURE_TOLERANCE_SECONDS = 300
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const CURRENCY = /^[A-Z]{3}$/

/** `t=<unix>,v1=<hex>` of [D40] */
const parseSignature = (header: string | undefined) => {
  const parts = new Map((header ?? "").split(",").map((p) => p.trim().split("=", 2) as [string, string]))
  const t = parts.get("t")
  const v1 = parts.get("v1")
  return t && /^\d{1,12}$/.test(t) && v1 && /^[0-9a-f]{64}$/i.test(v1) ? Option.some({ t: Number(t), v1: v1.toLowerCase() }) : Option.none()
}

/** [D40]: `X-Signature` is the HMAC of `<t>.<raw body>` with PAYMENT_WEBHOOK_SECRET, within 300 s of now (constant-time) */
export const verifyManualSignature = (secret: string, now: Date, raw: string, header: string | undefined) =>
  Option.match(parseSignature(header), {
    onNone: () => false,
    onSome: ({ t, v1 }) => Math.abs(now.getTime() / 1000 - t) <= SIGNATURE_TOLERANCE_SECONDS && constantTimeEqual(v1, hmacSha256Hex(secret, `${t}.${raw}`))
  })
    ? Effect.void
    : Effect.fail(new InvalidSignature())

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())

/** The field errors of a decode failure, in the wire's words ([D12]). */
const fieldErrors = (error: ParseResult.ParseError) => {
  const errors: Record<string, Array<string>> = {}
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const field = String(issue.path[0] ?? "body")
    const message = issue._tag === "Missing" ? requiredMessage(field) : issue.message
    errors[field] = [...(errors[field] ?? []), message]
  }
  return errors
}

/**
 * [D40]: the signed body as a payment event: 422 with the fields' errors, or 404 for a
 * well-formed event naming an invoice that cannot exist (as the invoice's own route answers).
 */
export const decodeManualEvent = (raw: string) =>
  Effect.gen(function* () {
    const json = decodeJson(raw)
    if (json._tag === "Left") return yield* Effect.fail(ValidationError.field("body", "The body must be valid JSON."))
    const body = json.right
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return yield* Effect.fail(ValidationError.field("body", "The body must be a JSON object."))
    }
    const event = Schema.decodeUnknownEither(PaymentEvent)(body)
    const uuid = (body as Record<string, unknown>)["invoice_uuid"]
    if (event._tag === "Left") {
      const errors = fieldErrors(event.left)
      // a well-formed event for an invoice that cannot exist is a 404, as the invoice's is
      if (!("invoice_uuid" in errors) && !(typeof uuid === "string" && UUID.test(uuid))) return yield* Effect.fail(new NotFound())
      return yield* Effect.fail(new ValidationError({ errors }))
    }
    if (!UUID.test(event.right.invoice_uuid)) return yield* Effect.fail(new NotFound())
    return { event: event.right, body }
  })

/**
 * [D123]: the event's `amount` (a decimal above 0.00) and `currency` (three letters) when sent,
 * else null (the invoice's own, [D40]); a malformed one is a 422 with the field's error.
 */
export const manualMoney = (event: PaymentEvent) =>
  Effect.gen(function* () {
    const errors: Record<string, Array<string>> = {}
    const cents = event.amount === undefined ? Option.some(null) : parseCents(event.amount)
    if (Option.isNone(cents)) errors["amount"] = ["The amount field must be a decimal string."]
    else if (cents.value === 0) errors["amount"] = ["The amount must be greater than 0.00."]
    const currency = event.currency === undefined ? null : event.currency.toUpperCase()
    if (currency !== null && !CURRENCY.test(currency)) errors["currency"] = ["The currency must be a three-letter code."]
    if (Option.isNone(cents) || Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
    return { amountCents: cents.value, currency }
  })
