import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { PromoUses } from "../catalog/PromoUses.ts"
import { Invoices } from "./Invoices.ts"

/** The catalogue's `PromoUses` port ([D33] rev. 2), read from this room's invoices. */
export const PromoUsesLive = Layer.effect(
  PromoUses,
  Effect.map(Invoices, (invoices) => PromoUses.of({ of: invoices.promoUsesOf }))
).pipe(Layer.provide(Invoices.Default))
