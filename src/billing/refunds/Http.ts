import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Api } from "../../Api.ts"
import { Refunds } from "../Refunds.ts"

const RefundsAdminHandlers = HttpApiBuilder.group(Api, "refundsAdmin", (handlers) =>
  Effect.gen(function* () {
    const refunds = yield* Refunds
    return handlers.handle("refundInvoice", ({ path, payload }) =>
      refunds.refund(path.invoice, {
        amount: Option.fromNullable(payload.amount),
        to: payload.to,
        reason: payload.reason,
        endService: payload.end_service ?? false
      })
    )
  })
)

export const RefundsHttpLive = RefundsAdminHandlers.pipe(Layer.provide(Refunds.Default))
