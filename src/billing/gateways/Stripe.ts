import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type Stripe from "stripe"
import { Catalog } from "../../catalog/Catalog.ts"
import { toCents } from "../../catalog/Money.ts"
import { AppClock } from "../../platform/Clock.ts"
import { AppConfig, type StripeConfig } from "../../platform/Config.ts"
import { InvalidSignature, ServiceUnavailable } from "../../platform/Errors.ts"
import { type Invoice, InvoiceNotPayable } from "../Domain.ts"
import { GatewayRefundFailed, type PaymentGateway, type GatewayRefundRequest, RefundUnavailable, type WebhookOutcome } from "./Gateway.ts"
import { type CardRow, StripeCustomers } from "./StripeCustomers.ts"
import { StripeRecords } from "./StripeRecords.ts"
import type { UserId } from "../../platform/Ids.ts"

/** [D112]: Stripe's webhook signatures are good for this long */
export const STRIPE_SIGNATURE_TOLERANCE_SECONDS = 300

/** Stripe's currencies without minor units, and those with three (charged in tens) */
const ZERO_DECIMAL = new Set(["BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"])
const THREE_DECIMAL = new Set(["BHD", "JOD", "KWD", "OMR", "TND"])

/** [D112]: an amount of two decimals in the currency's minor units, as Stripe counts them (a fraction is dropped) */
export const toMinorUnits = (amount: string, currency: string): number => {
  const cents = toCents(amount)
  const code = currency.toUpperCase()
  if (ZERO_DECIMAL.has(code)) return Math.floor(cents / 100)
  if (THREE_DECIMAL.has(code)) return cents * 10
  return cents
}

/** [D123]: an amount Stripe reports in the currency's minor units, in cents (three decimals: rounded down) */
export const fromMinorUnits = (minor: number, currency: string): number => {
  const code = currency.toUpperCase()
  if (ZERO_DECIMAL.has(code)) return minor * 100
  if (THREE_DECIMAL.has(code)) return Math.floor(minor / 10)
  return minor
}

/** `STRIPE_API_URL` as the package's host, port and protocol options (tests: a local stand-in) */
export const stripeOptions = (apiUrl: Option.Option<string>): Stripe.StripeConfig =>
  Option.match(apiUrl, {
    onNone: () => ({ maxNetworkRetries: 2, timeout: 20_000 }),
    onSome: (raw) => {
      const url = new URL(raw)
      const protocol = url.protocol === "http:" ? ("http" as const) : ("https" as const)
      return {
        host: url.hostname,
        port: url.port === "" ? (protocol === "http" ? 80 : 443) : Number(url.port),
        protocol,
        maxNetworkRetries: 0,
        timeout: 10_000
      }
    }
  })

/** the events that say a Checkout Session's money arrived ([D112]); others are answered 200 and left alone */
export const PAYING_EVENTS = new Set(["checkout.session.completed", "checkout.session.async_payment_succeeded"])

/** [D124]: what an off-session charge of a saved card came to */
export type OffSessionCharge =
  | { readonly _tag: "Succeeded"; readonly paymentIntent: string }
  /** `declined`: the card was declined (a card error); otherwise the charge failed another way ([D120]: the message is never shown) */
  | { readonly _tag: "Failed"; readonly message: string; readonly declined: boolean }

export interface StripeApi extends PaymentGateway {
  /** the event, when `Stripe-Signature` is the package's signature of these bytes, made within 300 s of `now` */
  readonly verifyEvent: (raw: string, signature: string | undefined, now: Date) => Effect.Effect<Stripe.Event, InvalidSignature>
  /** [D124]: the card a Checkout payment saved (its payment intent's payment method), if it saved one */
  readonly savedCardOf: (paymentIntent: string) => Effect.Effect<Option.Option<Omit<CardRow, "id">>, ServiceUnavailable>
  /** [D124]: charges a saved card off-session; the same key charges once */
  readonly chargeOffSession: (charge: {
    readonly customerId: string
    readonly methodId: string
    readonly amount: string
    readonly currency: string
    readonly invoiceUuid: string
    readonly idempotencyKey: string
  }) => Effect.Effect<OffSessionCharge>
  /** [D124]: a forgotten card is detached from its customer at Stripe */
  readonly detach: (methodId: string) => Effect.Effect<void, ServiceUnavailable>
}

/**
 * The `stripe` gateway ([D112]) through the official package: an invoice's payment URL is a
 * Checkout Session (one open session per invoice at a time), its webhook is verified by the
 * package, and a refund is a Stripe refund of the payment intent that paid the invoice. None
 * when STRIPE_SECRET_KEY / STRIPE_WEBHOOK_SECRET are not set.
 */
export class StripeGateway extends Context.Tag("billing/StripeGateway")<StripeGateway, Option.Option<StripeApi>>() {
  static readonly Live = Layer.effect(
    StripeGateway,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const stripeConfig = Option.flatten(Option.fromNullable(config.stripe))
      if (Option.isNone(stripeConfig)) return Option.none()
      return Option.some(yield* make(stripeConfig.value, config.appUrl))
    })
  ).pipe(Layer.provide(Layer.mergeAll(StripeRecords.Default, StripeCustomers.Default, Catalog.Default)))
}

const make = (stripeConfig: StripeConfig, appUrl: string) =>
  Effect.gen(function* () {
    const clock = yield* AppClock
    const catalog = yield* Catalog
    const records = yield* StripeRecords
    const customers = yield* StripeCustomers
    // the package (about 5 MB resident) is loaded only by a process that has Stripe configured
    // (issue 27; docs/decisions.md, "Idle memory")
    const { default: StripeClient } = yield* Effect.promise(() => import("stripe"))
    const stripe = new StripeClient(Redacted.value(stripeConfig.secretKey), stripeOptions(stripeConfig.apiUrl))
    const webhookSecret = Redacted.value(stripeConfig.webhookSecret)

    /** a call to Stripe's API; its failure is a 503 for our caller, logged without secrets */
    const call = <A>(what: string, f: () => Promise<A>) =>
      Effect.tryPromise({ try: f, catch: (e) => e }).pipe(
        Effect.tapError((e) => Effect.logWarning(`stripe: ${what} failed`, e instanceof Error ? e.message : String(e))),
        Effect.mapError(() => new ServiceUnavailable({ message: "The payment gateway is unavailable." }))
      )

    const linkOf = (session: Stripe.Checkout.Session) =>
      session.url === null
        ? Effect.fail(new ServiceUnavailable({ message: "The payment gateway is unavailable." }))
        : Effect.succeed({ url: session.url, expiresAt: new Date(session.expires_at * 1000) })

    /** the user's Stripe customer, made at the first checkout that saves a card */
    const customerFor = (userId: UserId) =>
      Effect.flatMap(
        customers.customerOf(userId),
        Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            Effect.flatMap(
              call("create customer", () => stripe.customers.create({ metadata: { user_id: String(userId) } }, { idempotencyKey: `customer:${userId}` })),
              (made) => customers.rememberCustomer(userId, made.id)
            )
        })
      )

    const paymentLink = (invoice: Invoice) =>
      Effect.gen(function* () {
        const now = yield* clock.now
        const amountMinor = toMinorUnits(invoice.amount, invoice.currency)
        const currency = invoice.currency.toLowerCase()
        const latest = yield* records.latestSession(invoice.id)
        // a second call while the session is open answers the same session
        if (Option.isSome(latest) && latest.value.expires_at > now && latest.value.amount_minor === amountMinor && latest.value.currency === currency) {
          const live = yield* call("retrieve checkout session", () => stripe.checkout.sessions.retrieve(latest.value.session_id))
          if (live.status === "open") return yield* linkOf(live)
          // paid at Stripe, its webhook not yet here: a second session would take the money twice
          if (live.status === "complete") return yield* Effect.fail(new InvoiceNotPayable())
        }
        const { cycle, plan } = yield* Effect.map(catalog.rowsOf([invoice.plan_id], [invoice.cycle_id]), (c) => ({
          plan: c.plan(invoice.plan_id),
          cycle: c.cycle(invoice.cycle_id)
        }))
        const made = Option.match(latest, { onNone: () => 0, onSome: (s) => s.made })
        const back = `${appUrl}/invoices/${invoice.uuid}`
        // [D124]: the payer agreed to keep the card: Checkout saves it on their customer for off-session charges
        const customer = invoice.save_card && invoice.user_id !== null ? yield* customerFor(invoice.user_id) : null
        const session = yield* call("create checkout session", () =>
          stripe.checkout.sessions.create(
            {
              mode: "payment",
              line_items: [
                {
                  quantity: 1,
                  price_data: {
                    currency,
                    unit_amount: amountMinor,
                    product_data: { name: `${plan.name} (${cycle.name})`, description: `Invoice ${invoice.uuid}` }
                  }
                }
              ],
              client_reference_id: invoice.uuid,
              metadata: { invoice_uuid: invoice.uuid },
              payment_intent_data: {
                metadata: { invoice_uuid: invoice.uuid },
                ...(customer === null ? {} : { setup_future_usage: "off_session" as const })
              },
              ...(customer === null ? {} : { customer }),
              success_url: `${back}?checkout=success`,
              cancel_url: `${back}?checkout=cancelled`
            },
            {
              // two calls at once get one session from Stripe; a new one only after the last closed
              idempotencyKey: `checkout:${invoice.uuid}:${made}:${amountMinor}`
            }
          )
        )
        const link = yield* linkOf(session)
        yield* records.insertSession({
          invoice_id: invoice.id,
          session_id: session.id,
          url: link.url,
          amount_minor: amountMinor,
          currency,
          expires_at: link.expiresAt,
          payment_intent: null
        })
        return link
      })

    /** a refund of the payment intent that paid the invoice (its transaction id, [D112]) */
    const refund = (payment: GatewayRefundRequest) =>
      Effect.gen(function* () {
        const intent = payment.transactionId
        // marked paid by an operator's hand, not through Stripe: nothing to pay back there
        if (intent === null || !intent.startsWith("pi_")) {
          return yield* Effect.fail(new RefundUnavailable({ message: "The invoice was not paid through Stripe: refund to the balance instead." }))
        }
        const made = yield* Effect.tryPromise({
          try: () =>
            stripe.refunds.create({
              payment_intent: intent,
              amount: toMinorUnits(payment.amount, payment.currency),
              metadata: { invoice_uuid: payment.invoiceUuid }
            }),
          catch: (e) => e
        }).pipe(
          Effect.tapError((e) => Effect.logWarning("stripe: create refund failed", e instanceof Error ? e.message : String(e))),
          Effect.mapError(() => new GatewayRefundFailed())
        )
        return { refundId: made.id }
      })

    /**
     * [D123] (issue 34): the open sessions of invoices no longer pending are expired at Stripe, a
     * batch a call. One Stripe would not expire (already completed or expired there) is closed
     * once Stripe shows it is not open; one Stripe could not be reached waits for the next call.
     */
    const closeStale = Effect.gen(function* () {
      const now = yield* clock.now
      const stale = yield* records.staleSessions(now, 50)
      yield* Effect.forEach(
        stale,
        ({ session_id }) =>
          call("expire checkout session", () => stripe.checkout.sessions.expire(session_id)).pipe(
            Effect.as(true),
            Effect.orElse(() =>
              call("retrieve checkout session", () => stripe.checkout.sessions.retrieve(session_id)).pipe(
                Effect.map((live) => live.status !== "open"),
                Effect.orElseSucceed(() => false)
              )
            ),
            Effect.flatMap((closed) => (closed ? records.markClosed(session_id, now) : Effect.void))
          ),
        { discard: true }
      )
    })

    const verifyEvent = (raw: string, signature: string | undefined, now: Date) =>
      Effect.tryPromise({
        try: () => stripe.webhooks.constructEventAsync(raw, signature ?? "", webhookSecret, STRIPE_SIGNATURE_TOLERANCE_SECONDS, undefined, now.getTime()),
        catch: () => new InvalidSignature()
      })

    /** [D123]: a paid Checkout Session is a payment of its invoice; any other event is ignored */
    const parseWebhook = (delivery: { readonly raw: string; readonly headers: Readonly<Record<string, string | undefined>> }) =>
      Effect.gen(function* () {
        const event = yield* verifyEvent(delivery.raw, delivery.headers["stripe-signature"], yield* clock.now)
        const object = event.data.object as { readonly object?: string; readonly payment_status?: string }
        if (!(PAYING_EVENTS.has(event.type) && object.object === "checkout.session" && object.payment_status === "paid")) {
          return { _tag: "Ignore", eventId: event.id, type: event.type } satisfies WebhookOutcome
        }
        const session = event.data.object as Stripe.Checkout.Session
        const intent = typeof session.payment_intent === "string" ? session.payment_intent : (session.payment_intent?.id ?? null)
        const currency = (session.currency ?? "").toUpperCase()
        return {
          _tag: "Paid",
          invoiceUuid: (session.metadata?.["invoice_uuid"] ?? session.client_reference_id ?? "").toLowerCase(),
          amountCents: session.amount_total === null ? null : fromMinorUnits(session.amount_total, currency),
          currency,
          eventId: event.id,
          transactionId: intent ?? session.id,
          payload: { event_id: event.id, type: event.type, session_id: session.id, payment_intent: intent }
        } satisfies WebhookOutcome
      })

    const savedCardOf = (paymentIntent: string) =>
      Effect.gen(function* () {
        const intent = yield* call("retrieve payment intent", () => stripe.paymentIntents.retrieve(paymentIntent))
        const methodId = typeof intent.payment_method === "string" ? intent.payment_method : (intent.payment_method?.id ?? null)
        const customerId = typeof intent.customer === "string" ? intent.customer : (intent.customer?.id ?? null)
        if (methodId === null || customerId === null || intent.setup_future_usage !== "off_session") return Option.none()
        const method = yield* call("retrieve payment method", () => stripe.paymentMethods.retrieve(methodId))
        if (method.card === undefined || method.card === null) return Option.none()
        return Option.some({
          method_id: method.id,
          customer_id: customerId,
          brand: method.card.brand,
          last4: method.card.last4,
          exp_month: method.card.exp_month,
          exp_year: method.card.exp_year
        })
      })

    const chargeOffSession: StripeApi["chargeOffSession"] = (charge) =>
      Effect.tryPromise({
        try: () =>
          stripe.paymentIntents.create(
            {
              amount: toMinorUnits(charge.amount, charge.currency),
              currency: charge.currency.toLowerCase(),
              customer: charge.customerId,
              payment_method: charge.methodId,
              off_session: true,
              confirm: true,
              metadata: { invoice_uuid: charge.invoiceUuid }
            },
            { idempotencyKey: charge.idempotencyKey }
          ),
        catch: (e) => e
      }).pipe(
        Effect.map(
          (intent): OffSessionCharge =>
            intent.status === "succeeded"
              ? { _tag: "Succeeded", paymentIntent: intent.id }
              : { _tag: "Failed", message: `The payment is ${intent.status}.`, declined: intent.status === "requires_payment_method" }
        ),
        Effect.catchAll((e) => {
          const message = e instanceof Error ? e.message : String(e)
          const declined = typeof e === "object" && e !== null && "type" in e && e.type === "StripeCardError"
          return Effect.as(Effect.logWarning("stripe: off-session charge failed", message), { _tag: "Failed", message, declined } as OffSessionCharge)
        })
      )

    const detach = (methodId: string) => Effect.asVoid(call("detach payment method", () => stripe.paymentMethods.detach(methodId)))

    return {
      name: "stripe",
      displayName: "Card (Stripe)",
      paymentLink,
      refund,
      closeStale,
      verifyEvent,
      parseWebhook,
      savedCardOf,
      chargeOffSession,
      detach
    } satisfies StripeApi
  })
