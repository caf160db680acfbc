import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type Stripe from "stripe"
import { AppClock } from "../../platform/Clock.ts"
import { InvalidSignature, NotFound, orNotFound, ValidationError } from "../../platform/Errors.ts"
import { GatewaysLive } from "../Gateways.ts"
import { Invoices } from "../Invoices.ts"
import { Payments } from "../Payments.ts"
import { SavedCards } from "../cards/SavedCards.ts"
import { StripeGateway, toMinorUnits } from "./Stripe.ts"
import { StripeRecords } from "./StripeRecords.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** the events that say a Checkout Session's money arrived ([D112]); others are answered 200 and left alone */
const PAYING_EVENTS = new Set(["checkout.session.completed", "checkout.session.async_payment_succeeded"])

/**
 * `POST /v1/webhooks/payments/stripe` ([D112]): the package verifies `Stripe-Signature` (300 s,
 * on the app clock), a paid Checkout Session pays its invoice as [D40] does (amount and currency
 * must be the invoice's), and each event id is handled once.
 */
export class StripeWebhook extends Effect.Service<StripeWebhook>()("billing/StripeWebhook", {
  effect: Effect.gen(function*() {
    const clock = yield* AppClock
    const gateway = yield* StripeGateway
    const records = yield* StripeRecords
    const invoices = yield* Invoices
    const payments = yield* Payments
    const savedCards = yield* SavedCards

    const detailOf = (invoiceId: number | null) =>
      invoiceId === null
        ? Effect.succeed(null)
        : Effect.flatMap(Effect.flatMap(invoices.byId(invoiceId), orNotFound), invoices.detail)

    /** a paid session pays its invoice: the invoice's id */
    const pay = (event: Stripe.Event, session: Stripe.Checkout.Session) =>
      Effect.gen(function*() {
        const uuid = session.metadata?.["invoice_uuid"] ?? session.client_reference_id ?? ""
        if (!UUID.test(uuid)) return yield* Effect.fail(new NotFound())
        const invoice = yield* Effect.flatMap(invoices.byUuid(uuid.toLowerCase()), orNotFound)
        // [D40] (rev. 2): the path's gateway must be the invoice's
        if (invoice.gateway !== "stripe") return yield* Effect.fail(new NotFound())
        const errors: Record<string, Array<string>> = {}
        if (session.amount_total !== toMinorUnits(invoice.amount, invoice.currency)) errors["amount"] = ["The amount does not match the invoice."]
        if ((session.currency ?? "").toUpperCase() !== invoice.currency) errors["currency"] = ["The currency does not match the invoice."]
        if (Object.keys(errors).length > 0) return yield* Effect.fail(new ValidationError({ errors }))
        const intent = typeof session.payment_intent === "string" ? session.payment_intent : session.payment_intent?.id ?? null
        yield* payments.markPaid(invoice.id, {
          transactionId: intent ?? session.id,
          gateway: "stripe",
          payload: { event_id: event.id, type: event.type, session_id: session.id, payment_intent: intent }
        })
        if (intent !== null) yield* records.setPaymentIntent(session.id, intent)
        // [D124]: the payer agreed to keep the card: the one Checkout saved is remembered
        yield* savedCards.rememberFrom(invoice, intent)
        return invoice.id
      })

    const accept = (raw: string, signature: string | undefined) =>
      Effect.gen(function*() {
        // a disabled gateway has no secret: nothing is signed for it
        const stripe = yield* Option.match(gateway, { onNone: () => Effect.fail(new InvalidSignature()), onSome: Effect.succeed })
        const now = yield* clock.now
        const event = yield* stripe.verifyEvent(raw, signature, now)
        const seen = yield* records.handledEvent(event.id)
        if (Option.isSome(seen)) return { event_id: event.id, type: event.type, handled: false, invoice: yield* detailOf(seen.value.invoice_id) }
        const object = event.data.object as { readonly object?: string; readonly payment_status?: string }
        const paying = PAYING_EVENTS.has(event.type) && object.object === "checkout.session" && object.payment_status === "paid"
        const invoiceId = paying ? yield* pay(event, event.data.object as Stripe.Checkout.Session) : null
        yield* records.recordEvent({ event_id: event.id, type: event.type, invoice_id: invoiceId, received_at: now })
        return { event_id: event.id, type: event.type, handled: paying, invoice: yield* detailOf(invoiceId) }
      })

    return { accept } as const
  }),
  dependencies: [StripeRecords.Default, Invoices.Default, Payments.Default, GatewaysLive, SavedCards.Default]
}) {}
