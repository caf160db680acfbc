import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { UserId } from "../platform/Ids.ts"

/**
 * [D33] (rev. 2): how many of a user's own orders hold a promo code, for its per-user limit. A
 * port: the catalogue declares it, billing (which owns the invoices) provides it, as `http/Auth`'s
 * `BearerTokens` is declared by http and provided by accounts.
 */
export class PromoUses extends Context.Tag("catalog/PromoUses")<
  PromoUses,
  {
    /** the user's pending or paid invoices with the promo */
    readonly of: (userId: UserId, promoId: number) => Effect.Effect<number>
  }
>() {}
