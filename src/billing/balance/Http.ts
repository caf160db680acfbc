import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Users } from "../../accounts/Users.ts"
import { Api } from "../../Api.ts"
import { formatCents } from "../../catalog/Money.ts"
import { CurrentUser } from "../../http/Auth.ts"
import { pageResponse } from "../../http/Envelope.ts"
import { NotFound } from "../../http/Errors.ts"
import { Balance, BalanceTransaction } from "../Balance.ts"
import { UserId } from "../../platform/Ids.ts"

const BalanceHandlers = HttpApiBuilder.group(Api, "balance", (handlers) =>
  Effect.gen(function* () {
    const balance = yield* Balance
    return handlers
      .handle("getBalance", () => Effect.flatMap(CurrentUser, (user) => balance.amountsOf(user.userId)))
      .handle("listBalanceTransactions", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.map(balance.transactionsPage(user.userId, urlParams.page ?? 1), (page) =>
            pageResponse(BalanceTransaction, {
              ...page,
              data: page.data.map((t) => ({ ...t, created_at: t.created_at.toISOString() }))
            })
          )
        )
      )
  })
)

const BalanceAdminHandlers = HttpApiBuilder.group(Api, "balanceAdmin", (handlers) =>
  Effect.gen(function* () {
    const balance = yield* Balance
    const users = yield* Users
    return handlers.handle("adjustBalance", ({ path, payload }) =>
      Effect.gen(function* () {
        if (Option.isNone(yield* users.findById(UserId.make(path.user)))) return yield* Effect.fail(new NotFound())
        const done = yield* balance.adjustNow({
          userId: UserId.make(path.user),
          currency: payload.currency,
          cents: payload.amount,
          reason: payload.reason,
          invoiceId: null
        })
        return { currency: payload.currency, amount: formatCents(done.cents), transaction: done.transaction }
      })
    )
  })
)

export const BalanceHttpLive = Layer.mergeAll(BalanceHandlers, BalanceAdminHandlers).pipe(Layer.provide(Layer.mergeAll(Balance.Default, Users.Default)))
