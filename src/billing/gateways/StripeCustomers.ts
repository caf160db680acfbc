import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

// the schema the contract shows lives in `billing/Domain.ts` (issue 34)
import { SavedCard } from "../Domain.ts"
import { UserId } from "../../platform/Ids.ts"
export { SavedCard }

const CardRow = Schema.Struct({ ...SavedCard.fields, method_id: Schema.String, customer_id: Schema.String })
export type CardRow = typeof CardRow.Type

/**
 * [D124] The billing room's `stripe_customers` and `payment_methods`: the Stripe customer made for
 * a user who agreed to keep a card, and the cards Checkout saved on it for off-session charges.
 */
export class StripeCustomers extends Effect.Service<StripeCustomers>()("billing/StripeCustomers", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const customerRow = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Schema.Struct({ customer_id: Schema.String }),
      execute: (userId) => sql`select customer_id from stripe_customers where user_id = ${userId}`
    })
    /** two first checkouts at once: the first customer stored wins, the other is answered it */
    const insertCustomer = SqlSchema.single({
      Request: Schema.Struct({ user_id: UserId, customer_id: Schema.String }),
      Result: Schema.Struct({ customer_id: Schema.String }),
      execute: (r) => sql`
        with ins as (insert into stripe_customers (user_id, customer_id) values (${r.user_id}, ${r.customer_id})
                     on conflict (user_id) do nothing returning customer_id)
        select customer_id from ins union all select customer_id from stripe_customers where user_id = ${r.user_id} limit 1`
    })
    const cards = SqlSchema.findAll({
      Request: Schema.Int,
      Result: CardRow,
      execute: (userId) => sql`
        select id, brand, last4, exp_month, exp_year, method_id, customer_id from payment_methods
        where user_id = ${userId} order by id desc`
    })
    const card = SqlSchema.findOne({
      Request: Schema.Struct({ user_id: UserId, id: Schema.Int }),
      Result: CardRow,
      execute: (r) => sql`
        select id, brand, last4, exp_month, exp_year, method_id, customer_id from payment_methods
        where user_id = ${r.user_id} and id = ${r.id}`
    })
    const insertCard = SqlSchema.void({
      Request: Schema.Struct({ ...CardRow.fields, id: Schema.optional(Schema.Int), user_id: UserId }),
      execute: (r) => sql`
        insert into payment_methods (user_id, method_id, customer_id, brand, last4, exp_month, exp_year)
        values (${r.user_id}, ${r.method_id}, ${r.customer_id}, ${r.brand}, ${r.last4}, ${r.exp_month}, ${r.exp_year})
        on conflict (method_id) do nothing`
    })
    const deleteCard = SqlSchema.void({
      Request: Schema.Struct({ user_id: UserId, id: Schema.Int }),
      execute: (r) => sql`delete from payment_methods where user_id = ${r.user_id} and id = ${r.id}`
    })

    return {
      customerOf: (userId: UserId) => customerRow(userId).pipe(Effect.map(Option.map((r) => r.customer_id)), Effect.orDie),
      rememberCustomer: (userId: UserId, customerId: string) =>
        insertCustomer({ user_id: userId, customer_id: customerId }).pipe(
          Effect.map((r) => r.customer_id),
          Effect.orDie
        ),
      /** the user's saved cards, newest first */
      cardsOf: (userId: UserId) => Effect.orDie(cards(userId)),
      cardOf: (userId: UserId, id: number) => Effect.orDie(card({ user_id: userId, id })),
      rememberCard: (userId: UserId, row: Omit<CardRow, "id">) => Effect.orDie(insertCard({ ...row, user_id: userId })),
      forgetCard: (userId: UserId, id: number) => Effect.orDie(deleteCard({ user_id: userId, id }))
    } as const
  })
}) {}
