import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { NotFound } from "../../platform/Errors.ts"
import type { UserId } from "../../platform/Ids.ts"
import { StripeGateway } from "../gateways/Stripe.ts"
import { type SavedCard, StripeCustomers } from "../gateways/StripeCustomers.ts"

/**
 * [D124]: the cards a user agreed to keep (`save_card: true` on an order or a change): remembered
 * when Stripe reports the Checkout payment that saved one, listed, and forgotten (detached at
 * Stripe first, so it can never be charged again).
 */
export class SavedCards extends Effect.Service<SavedCards>()("billing/SavedCards", {
  effect: Effect.gen(function* () {
    const customers = yield* StripeCustomers
    const stripe = yield* StripeGateway

    /** the caller's saved cards, newest first, as `{id, brand, last4, exp_month, exp_year}` */
    const list = (userId: UserId) =>
      Effect.map(
        customers.cardsOf(userId),
        (cards): ReadonlyArray<SavedCard> => cards.map((c) => ({ id: c.id, brand: c.brand, last4: c.last4, exp_month: c.exp_month, exp_year: c.exp_year }))
      )

    /** detached at Stripe, then forgotten here; another user's card (or none) is 404 */
    const forget = (userId: UserId, id: number) =>
      Effect.gen(function* () {
        const card = yield* Effect.flatMap(customers.cardOf(userId, id), Option.match({ onNone: () => Effect.fail(new NotFound()), onSome: Effect.succeed }))
        if (Option.isSome(stripe)) yield* stripe.value.detach(card.method_id)
        yield* customers.forgetCard(userId, id)
      })

    /**
     * after a Checkout payment of an invoice whose payer agreed to keep the card: the card it
     * saved is remembered. A failure to read it at Stripe is logged, never the webhook's failure.
     */
    const rememberFrom = (invoice: { readonly user_id: UserId | null; readonly save_card: boolean }, paymentIntent: string | null) =>
      invoice.user_id === null || !invoice.save_card || paymentIntent === null || Option.isNone(stripe)
        ? Effect.void
        : Effect.flatMap(
            stripe.value.savedCardOf(paymentIntent),
            Option.match({
              onNone: () => Effect.void,
              onSome: (card) => customers.rememberCard(invoice.user_id!, card)
            })
          ).pipe(Effect.catchAll((e) => Effect.logWarning("stripe: the saved card could not be read", e.message)))

    return { list, forget, rememberFrom } as const
  }),
  dependencies: [StripeCustomers.Default, StripeGateway.Live]
}) {}
