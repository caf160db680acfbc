import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { GatewaysLive, PaymentGateways } from "../Gateways.ts"
import { StripeWebhook } from "./StripeWebhook.ts"

const BillingGatewaysHandlers = HttpApiBuilder.group(Api, "billingGateways", (handlers) =>
  Effect.gen(function*() {
    const gateways = yield* PaymentGateways
    const stripe = yield* StripeWebhook
    return handlers
      .handle("listPaymentGateways", () =>
        Effect.succeed(gateways.list.map((g) => ({ name: g.name, display_name: g.displayName }))))
      .handle("stripeWebhook", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = yield* Effect.orElseSucceed(request.text, () => "")
          return yield* stripe.accept(raw, request.headers["stripe-signature"])
        }))
  }))

export const BillingGatewaysHttpLive = BillingGatewaysHandlers.pipe(
  Layer.provide(Layer.mergeAll(GatewaysLive, StripeWebhook.Default))
)
