import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import * as Option from "effect/Option"
import { InvalidSignature } from "../../platform/Errors.ts"
import { GatewaysLive, PaymentGateways } from "../Gateways.ts"
import { GatewaySettlement } from "./Settlement.ts"
import { StripeWebhook } from "./StripeWebhook.ts"

const BillingGatewaysHandlers = HttpApiBuilder.group(Api, "billingGateways", (handlers) =>
  Effect.gen(function* () {
    const gateways = yield* PaymentGateways
    const stripe = yield* StripeWebhook
    const settlement = yield* GatewaySettlement
    /** [D123]: the adapter verifies and parses, the settlement applies the money rules */
    const viaContract = (name: string) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const raw = yield* Effect.orElseSucceed(request.text, () => "")
        // a disabled gateway has no secret: nothing is signed for it
        const parse = yield* Option.match(
          Option.flatMapNullable(gateways.get(name), (g) => g.parseWebhook),
          {
            onNone: () => Effect.fail(new InvalidSignature()),
            onSome: Effect.succeed
          }
        )
        const parsed = yield* parse({ raw, headers: request.headers })
        if (parsed._tag === "Ignore") return { event_id: parsed.eventId, type: parsed.type, handled: false, outcome: null, invoice: null }
        const settled = yield* settlement.settle(name, parsed)
        return { event_id: parsed.eventId, type: "invoice_paid", handled: settled.outcome !== "duplicate", outcome: settled.outcome, invoice: settled.invoice }
      })
    return handlers
      .handle("listPaymentGateways", () => Effect.succeed(gateways.list.map((g) => ({ name: g.name, display_name: g.displayName }))))
      .handle("stripeWebhook", () =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = yield* Effect.orElseSucceed(request.text, () => "")
          return yield* stripe.accept(raw, request.headers["stripe-signature"])
        })
      )
      .handle("cryptobotWebhook", () => viaContract("cryptobot"))
  })
)

export const BillingGatewaysHttpLive = BillingGatewaysHandlers.pipe(
  Layer.provide(Layer.mergeAll(GatewaysLive, StripeWebhook.Default, GatewaySettlement.Default))
)
