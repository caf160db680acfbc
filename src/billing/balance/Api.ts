import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Schema from "effect/Schema"
import { PageParam } from "../../accounts/Api.ts"
import { AdminAuthentication, Authentication } from "../../http/Auth.ts"
import { Ok, OkPage } from "../../http/Envelope.ts"
import { Body, IdParam, string } from "../../platform/Fields.ts"
import { BalanceAmount, BalanceTransaction } from "../Balance.ts"
import { currencyCode, signedAmount } from "../MoneyFields.ts"

export const BalanceAdjusted = Schema.Struct({
  currency: Schema.String,
  amount: Schema.String,
  transaction: BalanceTransaction
}).annotations({ identifier: "BalanceAdjusted" })

/** [D109]: the caller's balance per currency and its ledger. */
export class BalanceApi extends HttpApiGroup.make("balance")
  .add(HttpApiEndpoint.get("getBalance", "/account/balance")
    .addSuccess(Ok(Schema.Array(BalanceAmount), { identifier: "BalanceList" })))
  .add(HttpApiEndpoint.get("listBalanceTransactions", "/account/balance/transactions")
    .setUrlParams(Schema.Struct({ page: Schema.optional(PageParam) }))
    .addSuccess(OkPage(BalanceTransaction, "BalanceTransactionPage")))
  .middlewareEndpoints(Authentication)
{}

/** [D109]: an admin's credit or debit of a user's balance (audited, [D100]). */
export class BalanceAdminApi extends HttpApiGroup.make("balanceAdmin")
  .add(HttpApiEndpoint.post("adjustBalance", "/admin/users/:user/balance")
    .setPath(Schema.Struct({ user: IdParam }))
    .setPayload(Body({
      amount: signedAmount("amount"),
      currency: currencyCode("currency"),
      reason: string("reason", { max: 255 })
    }))
    .addSuccess(Ok(BalanceAdjusted, { identifier: "BalanceAdjustedResponse", status: 201 })))
  .middlewareEndpoints(AdminAuthentication)
{}
