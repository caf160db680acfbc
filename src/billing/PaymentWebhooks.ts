import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { parseCents, toCents } from "../catalog/Money.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { constantTimeEqual, hmacSha256Hex } from "../platform/Crypto.ts"
import { InvalidSignature, NotFound, ValidationError } from "../platform/Errors.ts"
import { type Invoice, PaymentEvent } from "./Domain.ts"
import { requiredMessage } from "../platform/Fields.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { Invoices } from "./Invoices.ts"
import { Payments } from "./Payments.ts"

const SIGNATURE_TOLERANCE_SECONDS = 300
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const CURRENCY = /^[A-Z]{3}$/

/** `t=<unix>,v1=<hex>` of [D40] */
const parseSignature = (header: string | undefined) => {
  const parts = new Map((header ?? "").split(",").map((p) => p.trim().split("=", 2) as [string, string]))
  const t = parts.get("t")
  const v1 = parts.get("v1")
  return t && /^\d{1,12}$/.test(t) && v1 && /^[0-9a-f]{64}$/i.test(v1) ? Option.some({ t: Number(t), v1: v1.toLowerCase() }) : Option.none()
}


const decodeEvent = Schema.decodeUnknownEither(Schema.parseJson())

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

/** The payment webhook of [D40], after the transport: the signature, the event, the payment. */
export class PaymentWebhooks extends Effect.Service<PaymentWebhooks>()("billing/PaymentWebhooks", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const clock = yield* AppClock
    const gateways = yield* PaymentGateways
    const invoices = yield* Invoices
    const payments = yield* Payments

    const verify = (raw: string, header: string | undefined) =>
      Effect.gen(function*() {
        // no secret configured: the webhook does not exist
        const secret = yield* Option.match(config.paymentWebhookSecret, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })
        const now = yield* clock.now
        const valid = Option.match(parseSignature(header), {
          onNone: () => false,
          onSome: ({ t, v1 }) =>
            Math.abs(now.getTime() / 1000 - t) <= SIGNATURE_TOLERANCE_SECONDS &&
            constantTimeEqual(v1, hmacSha256Hex(Redacted.value(secret), `${t}.${raw}`))
        })
        if (!valid) return yield* Effect.fail(new InvalidSignature())
      })

    const decode = (raw: string) =>
      Effect.gen(function*() {
        const json = decodeEvent(raw)
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

    /** `amount` and `currency` when sent (a decimal above 0.00, three letters); absent: the invoice's */
    const moneyOf = (event: PaymentEvent, invoice: Invoice) =>
      Effect.gen(function*() {
        const errors: Record<string, Array<string>> = {}
        const cents = event.amount === undefined ? Option.some(toCents(invoice.amount)) : parseCents(event.amount)
        if (Option.isNone(cents)) errors["amount"] = ["The amount field must be a decimal string."]
        else if (event.amount !== undefined && cents.value === 0) errors["amount"] = ["The amount must be greater than 0.00."]
        const currency = event.currency === undefined ? invoice.currency : event.currency.toUpperCase()
        if (!CURRENCY.test(currency)) errors["currency"] = ["The currency must be a three-letter code."]
        if (Option.isNone(cents) || Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        return { amountCents: cents.value, currency }
      })

    /**
     * signed, well-formed, for an invoice of this gateway: the payment goes by [D123]'s rules
     * (paid once; money that differs from the invoice, or for an invoice no longer pending, to the
     * payer's balance), answered 200 with the invoice
     */
    const accept = (gateway: string, raw: string, signature: string | undefined) =>
      Effect.gen(function*() {
        yield* verify(raw, signature)
        if (Option.isNone(gateways.get(gateway))) return yield* Effect.fail(new NotFound())
        const { body, event } = yield* decode(raw)
        const invoice = yield* Effect.flatMap(invoices.byUuid(event.invoice_uuid.toLowerCase()), Option.match({
          onNone: () => Effect.fail(new NotFound()),
          onSome: Effect.succeed
        }))
        if (invoice.gateway !== gateway) return yield* Effect.fail(new NotFound())
        const money = yield* moneyOf(event, invoice)
        yield* payments.receive(invoice.id, { gateway, transactionId: event.transaction_id, ...money, payload: body })
        // [D123]: an invoice no longer pending has no payment page left open
        yield* gateways.closeStale
        return yield* Effect.flatMap(Effect.flatMap(invoices.byId(invoice.id), Option.match({
          onNone: () => Effect.fail(new NotFound()),
          onSome: Effect.succeed
        })), invoices.detail)
      })

    return { accept } as const
  }),
  dependencies: [Invoices.Default, Payments.Default, GatewaysLive]
}) {}
