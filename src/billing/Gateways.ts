import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey, constantTimeEqual } from "../platform/Crypto.ts"

/** Where the payer goes to pay one invoice, and until when the link works. */
export interface PaymentLink {
  readonly url: string
  readonly expiresAt: Date
}

/** One payment provider ([D37]). Its webhook arrives at `/v1/webhooks/payments/{name}` ([D40]). */
export interface PaymentGateway {
  readonly name: string
  readonly paymentLink: (invoice: { readonly uuid: string }) => Effect.Effect<PaymentLink>
  /**
   * [D110]: pays `amount` (decimal string) of a paid invoice back to the payer; the provider's
   * refund id. Absent when the provider cannot refund (`manual`): a refund `to: gateway` is then
   * 422 `errors.to`.
   */
  readonly refund?: (payment: RefundRequest) => Effect.Effect<{ readonly refundId: string }, GatewayRefundFailed>
}

/** [D110]: what a gateway needs to pay part of an invoice back. */
export interface RefundRequest {
  readonly invoiceUuid: string
  readonly transactionId: string | null
  readonly amount: string
  readonly currency: string
}

/** [D110]: the provider refused or failed the refund; nothing was recorded. */
export class GatewayRefundFailed extends Schema.TaggedError<GatewayRefundFailed>()("GatewayRefundFailed", {
  message: Schema.optionalWith(Schema.String, { default: () => "The payment gateway could not refund the payment." })
}, HttpApiSchema.annotations({ status: 502 })) {}

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
export class ManualGateway extends Context.Tag("billing/ManualGateway")<ManualGateway, PaymentGateway & {
  /** the pay page's check: signature (constant time), then expiry */
  readonly checkLink: (uuid: string, expires: string | undefined, signature: string | undefined) => Effect.Effect<LinkCheck>
}>() {
  static readonly Live = Layer.effect(
    ManualGateway,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const clock = yield* AppClock
      const appKey = yield* AppKey
      const signatureOf = (uuid: string, expires: number) => appKey.sign(`${uuid}.${expires}`)
      return {
        name: "manual",
        paymentLink: (invoice) =>
          Effect.map(clock.now, (now) => {
            const expires = Math.floor(now.getTime() / 1000) + PAY_LINK_SECONDS
            return {
              url: `${config.publicUrl}/pay/${invoice.uuid}?expires=${expires}&signature=${signatureOf(invoice.uuid, expires)}`,
              expiresAt: new Date(expires * 1000)
            }
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

/**
 * The payment providers behind one interface ([D37]): each provider is its own layer, and this
 * registry lists the ones the deployment serves. A real provider adds its layer and its entry.
 */
export class PaymentGateways extends Context.Tag("billing/PaymentGateways")<PaymentGateways, {
  readonly get: (name: string) => Option.Option<PaymentGateway>
}>() {
  static readonly fromList = (gateways: ReadonlyArray<PaymentGateway>) => {
    const byName = new Map(gateways.map((g) => [g.name, g] as const))
    return PaymentGateways.of({ get: (name) => Option.fromNullable(byName.get(name)) })
  }

  /** The built-in gateways: `manual`. */
  static readonly Live = Layer.effect(PaymentGateways, Effect.map(ManualGateway, (manual) => PaymentGateways.fromList([manual])))
}

/** The registry with the built-in gateways under it. */
export const GatewaysLive = PaymentGateways.Live.pipe(Layer.provideMerge(ManualGateway.Live))
