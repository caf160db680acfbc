import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import * as Schema from "effect/Schema"
import { PageParam } from "../../platform/Page.ts"
import { AdminAuthentication, Authentication } from "../../http/Middleware.ts"
import { describe } from "../../http/Describe.ts"
import { Ok, OkPage } from "../../http/Envelope.ts"
import { Body, IdParam, string } from "../../platform/Fields.ts"
import { BalanceAmount, BalanceTransaction } from "../Domain.ts"
import { currencyCode, signedAmount } from "../MoneyFields.ts"

export const BalanceAdjusted = Schema.Struct({
  currency: Schema.String,
  amount: Schema.String,
  transaction: BalanceTransaction
}).annotations({ identifier: "BalanceAdjusted" })

/** [D109]: the caller's balance per currency and its ledger. */
export class BalanceApi extends HttpApiGroup.make("balance")
  .add(
    HttpApiEndpoint.get("getBalance", "/account/balance")
      .addSuccess(Ok(Schema.Array(BalanceAmount), { identifier: "BalanceList" }))
      .annotateContext(
        describe(
          "Get your balance",
          "The caller's balance in each currency ever credited (never below 0.00). New invoices in that currency take what they can from it."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listBalanceTransactions", "/account/balance/transactions")
      .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
      .addSuccess(OkPage(BalanceTransaction, "BalanceTransactionPage"))
      .annotateContext(
        describe(
          "List your balance transactions",
          "The ledger of the balance, newest first, 15 a page: each credit (positive `amount`) and debit (negative), with its reason and the invoice it concerns. It always sums to the balance."
        )
      )
  )
  .middlewareEndpoints(Authentication)
  .annotate(OpenApi.Description, "The caller's balance per currency and its ledger.") {}

/** [D109]: an admin's credit or debit of a user's balance (audited, [D100]). */
export class BalanceAdminApi extends HttpApiGroup.make("balanceAdmin")
  .add(
    HttpApiEndpoint.post("adjustBalance", "/admin/users/:user/balance")
      .setPath(Schema.Struct({ user: IdParam }))
      .setPayload(
        Body({
          amount: signedAmount("amount"),
          currency: currencyCode("currency"),
          reason: string("reason", { max: 255 })
        })
      )
      .addSuccess(Ok(BalanceAdjusted, { identifier: "BalanceAdjustedResponse", status: 201 }))
      .annotateContext(
        describe(
          "Credit or debit a user's balance (admin)",
          "A signed `amount` (not 0.00) in a currency, with a reason; answers the new balance and its ledger row. A debit below zero is 422 `Insufficient balance.`."
        )
      )
  )
  .middlewareEndpoints(AdminAuthentication)
  .annotate(OpenApi.Description, "Users' balances, for admins.") {}
