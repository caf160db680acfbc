import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Api } from "../../Api.ts"
import { InvoiceLedger } from "./Reads.ts"
import { UserId } from "../../platform/Ids.ts"

const BillingConsoleHandlers = HttpApiBuilder.group(Api, "billingConsole", (handlers) =>
  Effect.gen(function* () {
    const ledger = yield* InvoiceLedger
    return handlers
      .handle("listInvoices", ({ urlParams }) =>
        ledger.page(urlParams.user_id === undefined ? undefined : UserId.make(urlParams.user_id), urlParams.status, urlParams.page ?? 1)
      )
      .handle("revenue", () => ledger.revenue(30))
  })
)

export const BillingConsoleHttpLive = BillingConsoleHandlers.pipe(Layer.provide(InvoiceLedger.Default))
