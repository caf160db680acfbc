import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { CurrentUser } from "../../http/Auth.ts"
import { SavedCards } from "./SavedCards.ts"

const PaymentMethodsHandlers = HttpApiBuilder.group(Api, "paymentMethods", (handlers) =>
  Effect.gen(function* () {
    const cards = yield* SavedCards
    return handlers
      .handle("listPaymentMethods", () => Effect.flatMap(CurrentUser, (user) => cards.list(user.userId)))
      .handle("deletePaymentMethod", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => cards.forget(user.userId, path.method)).pipe(Effect.as("Payment method deleted."))
      )
  })
)

export const PaymentMethodsHttpLive = PaymentMethodsHandlers.pipe(Layer.provide(SavedCards.Default))
