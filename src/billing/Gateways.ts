import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { AppClock } from "../platform/Clock.ts"
import { standInManualGateway } from "./BillingMemory.ts"
import { AppConfig } from "../platform/Config.ts"
import * as Redacted from "effect/Redacted"
import { AppKey, constantTimeEqual } from "../platform/Crypto.ts"
import { NotFound, ValidationError } from "../platform/Errors.ts"
import { CryptoBotGateway } from "./gateways/CryptoBot.ts"
import type { PaymentGateway, WebhookOutcome } from "./gateways/Gateway.ts"
import { decodeManualEvent, manualMoney, verifyManualSignature } from "./gateways/ManualWebhook.ts"
import { StripeGateway } from "./gateways/Stripe.ts"

export type { PaymentGateway, PaymentLink, GatewayRefundRequest, GatewayWebhook, WebhookOutcome } from "./gateways/Gateway.ts"
export { GatewayRefundFailed } from "./gateways/Gateway.ts"

/** What a `/pay/{uuid}` link of the manual gateway is worth. */
export type LinkCheck = "valid" | "invalid" | "expired"

/** [D37]: a link of the manual gateway is valid this long. */
export const PAY_LINK_SECONDS = 30 * 60

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * The built-in `manual` gateway ([D37]): `$PUBLIC_URL/pay/<uuid>?expires=<unix>&signature=<hmac>`,
 * signed with APP_KEY, valid 30 minutes; the pay page shows bank-transfer instructions and an
 * operator records the payment (admin mark-paid, or a bank integration calling the webhook).
 */
export class ManualGateway extends Context.Tag("billing/ManualGateway")<
  ManualGateway,
  PaymentGateway & {
    /** the pay page's check: signature (constant time), then expiry */
    readonly checkLink: (uuid: string, expires: string | undefined, signature: string | undefined) => Effect.Effect<LinkCheck>
  }
>() {
  static readonly Live = Layer.effect(
    ManualGateway,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const clock = yield* AppClock
      const appKey = yield* AppKey
      const signatureOf = (uuid: string, expires: number) => appKey.sign(`${uuid}.${expires}`)
      return {
        name: "manual",
        // [D110]: no `refund`: an operator's transfer is not something we can reverse
        displayName: "Bank transfer",
        paymentLink: (invoice) =>
          Effect.map(clock.now, (now) => {
            const expires = Math.floor(now.getTime() / 1000) + PAY_LINK_SECONDS
            return {
              url: `${config.publicUrl}/pay/${invoice.uuid}?expires=${expires}&signature=${signatureOf(invoice.uuid, expires)}`,
              expiresAt: new Date(expires * 1000)
            }
          }),
        // [D123] [D40]: `X-Signature` over the raw body, then the event; its transaction id is the event's id
        parseWebhook: (delivery) =>
          Effect.gen(function* () {
            const secret = yield* Option.match(config.paymentWebhookSecret, { onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed })
            yield* verifyManualSignature(Redacted.value(secret), yield* clock.now, delivery.raw, delivery.headers["x-signature"])
            const { body, event } = yield* decodeManualEvent(delivery.raw)
            const money = yield* manualMoney(event)
            return {
              _tag: "Paid",
              invoiceUuid: event.invoice_uuid.toLowerCase(),
              amountCents: money.amountCents,
              currency: money.currency,
              eventId: event.transaction_id,
              transactionId: event.transaction_id,
              payload: body
            } satisfies WebhookOutcome
          }),
        checkLink: (uuid, expires, signature) =>
          Effect.map(clock.now, (now): LinkCheck => {
            if (!UUID.test(uuid) || expires === undefined || !/^\d{1,12}$/.test(expires) || signature === undefined) {
              return "invalid"
            }
            if (!constantTimeEqual(signature.toLowerCase(), signatureOf(uuid, Number(expires)))) return "invalid"
            return Number(expires) * 1000 < now.getTime() ? "expired" : "valid"
          })
      }
    })
  )
}

/** [D112]: what `POST /v1/orders` (and a plan change) answers for an unknown or disabled gateway */
export const invalidGateway = () => ValidationError.field("gateway", "The selected gateway is invalid.")

/**
 * The payment providers behind one interface ([D37]): each provider is its own layer, and this
 * registry lists the ones the deployment serves ([D112]: `manual` always, `stripe` when its keys
 * are set). Other rooms resolve a gateway by name here, and refund through it ([D110]).
 */
export class PaymentGateways extends Context.Tag("billing/PaymentGateways")<
  PaymentGateways,
  {
    readonly get: (name: string) => Option.Option<PaymentGateway>
    /** the enabled gateways, in the order a payer sees them */
    readonly list: ReadonlyArray<PaymentGateway>
    /** the named gateway, or the default (DEFAULT_GATEWAY, else `manual`); unknown or disabled: 422 `errors.gateway` */
    readonly resolve: (name: string | null | undefined) => Effect.Effect<PaymentGateway, ValidationError>
    /**
     * [D123] (issue 34): every gateway closes its payment pages of invoices no longer pending. Call
     * it after the transaction that cancelled (or paid) invoices commits; it never fails.
     */
    readonly closeStale: Effect.Effect<void>
  }
>() {
  static readonly fromList = (gateways: ReadonlyArray<PaymentGateway>, defaultName = "manual") => {
    const byName = new Map(gateways.map((g) => [g.name, g] as const))
    const get = (name: string) => Option.fromNullable(byName.get(name))
    return PaymentGateways.of({
      get,
      list: gateways,
      resolve: (name) => Option.match(get(name ?? defaultName), { onNone: () => Effect.fail(invalidGateway()), onSome: Effect.succeed }),
      closeStale: Effect.forEach(
        gateways,
        (g) =>
          g.closeStale === undefined
            ? Effect.void
            : g.closeStale.pipe(Effect.catchAllCause((cause) => Effect.logWarning(`${g.name}: closing payment pages failed`, cause))),
        { discard: true }
      )
    })
  }

  /** `manual`, and `stripe` and `cryptobot` when configured ([D123]) */
  static readonly Live = Layer.effect(
    PaymentGateways,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const manual = yield* ManualGateway
      const stripe = yield* StripeGateway
      const cryptobot = yield* CryptoBotGateway
      return PaymentGateways.fromList([manual, ...Option.toArray(stripe), ...Option.toArray(cryptobot)], config.defaultGateway ?? "manual")
    })
  )

  /** issue 35: `manual` only, a stand-in whose links go to a test page (`BillingMemory.ts`) */
  static readonly Test: Layer.Layer<PaymentGateways, never, AppClock> = Layer.effect(
    PaymentGateways,
    Effect.map(AppClock, (clock) => PaymentGateways.fromList([standInManualGateway(clock)]))
  )
}

/** The registry with the built-in gateways under it. */
export const GatewaysLive = PaymentGateways.Live.pipe(Layer.provideMerge(Layer.mergeAll(ManualGateway.Live, StripeGateway.Live, CryptoBotGateway.Live)))
