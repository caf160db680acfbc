import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type Stripe from "stripe"
import { MAX_CENTS, toCents } from "../../catalog/Money.ts"
import { AppClock } from "../../platform/Clock.ts"
import { InvalidSignature, NotFound, orNotFound, ValidationError } from "../../platform/Errors.ts"
import { GatewaysLive, PaymentGateways } from "../Gateways.ts"
import { Invoices } from "../Invoices.ts"
import { Payments } from "../Payments.ts"
import { SavedCards } from "../cards/SavedCards.ts"
import { fromMinorUnits, PAYING_EVENTS, StripeGateway, toMinorUnits } from "./Stripe.ts"
import { StripeRecords } from "./StripeRecords.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * `POST /v1/webhooks/payments/stripe` ([D112]): the package verifies `Stripe-Signature` (300 s,
 * on the app clock), a paid Checkout Session pays its invoice as [D40] does (amount and currency
 * must be the invoice's), and each event id is handled once.
 */
export class StripeWebhook extends Effect.Service<StripeWebhook>()("billing/StripeWebhook", {
  effect: Effect.gen(function* () {
    const clock = yield* AppClock
    const gateway = yield* StripeGateway
    const records = yield* StripeRecords
    const invoices = yield* Invoices
    const payments = yield* Payments
    const savedCards = yield* SavedCards
    const gateways = yield* PaymentGateways

    const detailOf = (invoiceId: number | null) =>
      invoiceId === null ? Effect.succeed(null) : Effect.flatMap(Effect.flatMap(invoices.byId(invoiceId), orNotFound), invoices.detail)

    /**
     * a paid session's money goes to its invoice by [D123]'s rules (once per payment intent; a
     * payment that differs from the invoice, or for an invoice no longer pending, to the payer's
     * balance): the invoice's id
     */
    const pay = (event: Stripe.Event, session: Stripe.Checkout.Session) =>
      Effect.gen(function* () {
        const uuid = session.metadata?.["invoice_uuid"] ?? session.client_reference_id ?? ""
        if (typeof uuid !== "string" || !UUID.test(uuid)) return yield* Effect.fail(new NotFound())
        const invoice = yield* Effect.flatMap(invoices.byUuid(uuid.toLowerCase()), orNotFound)
        // [D40] (rev. 2): the path's gateway must be the invoice's
        if (invoice.gateway !== "stripe") return yield* Effect.fail(new NotFound())
        const currency = typeof session.currency === "string" ? session.currency.toUpperCase() : ""
        const minor = session.amount_total
        if (!/^[A-Z]{3}$/.test(currency) || typeof minor !== "number" || !Number.isSafeInteger(minor) || minor < 0) {
          return yield* Effect.fail(ValidationError.field("body", "The Checkout Session has no amount_total and currency."))
        }
        // the invoice's own amount when Stripe charged exactly it (a currency without minor units drops a fraction)
        const amountCents =
          currency === invoice.currency && minor === toMinorUnits(invoice.amount, invoice.currency) ? toCents(invoice.amount) : fromMinorUnits(minor, currency)
        if (amountCents > MAX_CENTS) return yield* Effect.fail(ValidationError.field("body", "The Checkout Session has no amount_total and currency."))
        const intent = typeof session.payment_intent === "string" ? session.payment_intent : (session.payment_intent?.id ?? null)
        yield* payments.receive(invoice.id, {
          gateway: "stripe",
          transactionId: intent ?? session.id,
          amountCents,
          currency,
          payload: { event_id: event.id, type: event.type, session_id: session.id, payment_intent: intent }
        })
        if (intent !== null) yield* records.setPaymentIntent(session.id, intent)
        // [D124]: the payer agreed to keep the card: the one Checkout saved is remembered
        yield* savedCards.rememberFrom(invoice, intent)
        return invoice.id
      })

    const accept = (raw: string, signature: string | undefined) =>
      Effect.gen(function* () {
        // a disabled gateway has no secret: nothing is signed for it
        const stripe = yield* Option.match(gateway, { onNone: () => Effect.fail(new InvalidSignature()), onSome: Effect.succeed })
        const now = yield* clock.now
        const event = yield* stripe.verifyEvent(raw, signature, now)
        // signed but not an event (issue 34): nothing to answer for
        if (typeof event.id !== "string" || event.id === "" || event.id.length > 255 || typeof event.type !== "string") {
          return yield* Effect.fail(ValidationError.field("body", "The event must have an id and a type."))
        }
        const seen = yield* records.handledEvent(event.id)
        if (Option.isSome(seen)) return { event_id: event.id, type: event.type, handled: false, invoice: yield* detailOf(seen.value.invoice_id) }
        // an event without `data.object` (issue 34) is one we do not handle: 200, as Stripe expects for
        // every event it delivers (a 4xx would only make it retry for days)
        const data: unknown = (event as { readonly data?: unknown }).data
        const object: unknown = typeof data === "object" && data !== null ? (data as { readonly object?: unknown }).object : undefined
        const session = typeof object === "object" && object !== null ? (object as { readonly object?: unknown; readonly payment_status?: unknown }) : {}
        const paying = PAYING_EVENTS.has(event.type) && session.object === "checkout.session" && session.payment_status === "paid"
        const invoiceId = paying ? yield* pay(event, session as Stripe.Checkout.Session) : null
        yield* records.recordEvent({ event_id: event.id, type: event.type, invoice_id: invoiceId, received_at: now })
        // [D123]: an invoice no longer pending has no payment page left open
        if (paying) yield* gateways.closeStale
        return { event_id: event.id, type: event.type, handled: paying, invoice: yield* detailOf(invoiceId) }
      })

    return { accept } as const
  }),
  dependencies: [StripeRecords.Default, Invoices.Default, Payments.Default, GatewaysLive, SavedCards.Default]
}) {}
