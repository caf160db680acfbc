import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Schema from "effect/Schema"
import { PlanId } from "../platform/Ids.ts"

/**
 * The catalogue's entities, one schema each: the row as the repository decodes it is the admin
 * answer; the public answers are the same schema less the admin's columns.
 */

/**
 * [D95]: `monthly` (calendar months, UTC), `billing_day` (each month on the day of the month the
 * service started, clamped to the month's last day) or `never` (one quota for the service's life).
 */
export const USAGE_RESETS = ["monthly", "billing_day", "never"] as const
export const UsageReset = Schema.Literal(...USAGE_RESETS)
export type UsageReset = typeof UsageReset.Type

/** [D104]: over the quota the peers leave the node (`suspend`) or stay at `throttle_mbps` (`throttle`). */
export const QUOTA_ACTIONS = ["suspend", "throttle"] as const
export const QuotaAction = Schema.Literal(...QUOTA_ACTIONS)
export type QuotaAction = typeof QuotaAction.Type

export const Plan = Schema.Struct({
  id: PlanId,
  name: Schema.String,
  description: Schema.String,
  bandwidth_limit_gb: Schema.Int,
  speed_limit_mbps: Schema.NullOr(Schema.Int),
  trial_days: Schema.Int,
  /** [D90]: devices a service of the plan may have; 0 = unlimited */
  device_limit: Schema.Int,
  /** [D95]: when the plan's quota starts again */
  usage_reset: UsageReset,
  /** [D104]: what the quota does when used up */
  quota_action: QuotaAction,
  /** [D104]: the speed over the quota of a `throttle` plan; null with `suspend` */
  throttle_mbps: Schema.NullOr(Schema.Int),
  is_active: Schema.Boolean
}).annotations({ identifier: "AdminPlan" })
export type Plan = typeof Plan.Type

/** The spec's Plan: [D70]'s `is_active` is for admins only. */
export const PublicPlan = Plan.omit("is_active").annotations({ identifier: "Plan" })

/** `price` is the database's `numeric(12,2)` as text: two decimals ([D32]). */
export const Cycle = Schema.Struct({
  id: Schema.Int,
  plan_id: PlanId,
  name: Schema.String,
  duration_days: Schema.Int,
  price: Schema.String,
  currency: Schema.String
}).annotations({ identifier: "PlanBillingCycle" })
export type Cycle = typeof Cycle.Type

/** The spec's Billing cycle. */
export const PublicCycle = Cycle.omit("plan_id").annotations({ identifier: "BillingCycle" })

export const DiscountType = Schema.Literal("percentage", "fixed")
export type DiscountType = typeof DiscountType.Type

export const PromoCode = Schema.Struct({
  id: Schema.Int,
  code: Schema.String,
  type: DiscountType,
  /** percent or amount, `numeric(12,2)` as text */
  value: Schema.String,
  expires_at: Schema.NullOr(Schema.DateFromSelf),
  max_uses: Schema.NullOr(Schema.Int),
  /** [D33] (rev. 2): uses of one caller (pending or paid invoices); null: no limit */
  max_uses_per_user: Schema.NullOr(Schema.Int),
  uses: Schema.Int
})
export type PromoCode = typeof PromoCode.Type

export const INVALID_PLAN = "The selected plan id is invalid."
export const INVALID_CYCLE = "The selected cycle id is invalid."

/** [D33]: unknown, expired, used up (overall or by the caller), or not valid for the plan. */
export class PromoInvalid extends Schema.TaggedError<PromoInvalid>()(
  "PromoInvalid",
  {
    message: Schema.optionalWith(Schema.String, { default: () => "Invalid or expired promo code." })
  },
  HttpApiSchema.annotations({ status: 422 })
) {}

/** The spec's Promo validation result; `value` a JSON number ([D33]). */
export const PromoValidation = Schema.Struct({
  code: Schema.String,
  type: DiscountType,
  value: Schema.Number,
  original_price: Schema.String,
  discounted_price: Schema.String,
  currency: Schema.String
}).annotations({ identifier: "PromoValidation" })
