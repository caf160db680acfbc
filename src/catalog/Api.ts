import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { AdminAuthentication, PromoValidateRateLimit } from "../http/Middleware.ts"
import { Ok } from "../http/Envelope.ts"
import { errorEnvelope } from "../http/Errors.ts"
import { Body, boolean, checkedField, IdParam, integer, label, oneOf, string } from "../platform/Fields.ts"
import { Plan, PromoCode, PromoInvalid, PromoValidation, PublicCycle, PublicPlan, QUOTA_ACTIONS, USAGE_RESETS } from "./Domain.ts"
import { formatCents, parseCents } from "./Money.ts"

// ---- resources -----------------------------------------------------------------------

/** [D31]: `GET /v1/plans/{plan}` is the Plan plus its cycles. */
export const PlanWithCycles = Schema.Struct({ ...PublicPlan.fields, cycles: Schema.Array(PublicCycle) }).annotations({ identifier: "PlanWithCycles" })

/** [D31]: `GET /v1/plan/cycles/{cycle}` is the Billing cycle plus `plan {id, name}`. */
export const CycleWithPlan = Schema.Struct({
  ...PublicCycle.fields,
  plan: Plan.pick("id", "name")
}).annotations({ identifier: "CycleWithPlan" })

/** The admin's promo: the stored code with its plans; `value` a JSON number, `expires_at` ISO 8601. */
/** a stored decimal (`"12.50"`) shown as a JSON number (`12.5`) */
const DecimalAsNumber = Schema.transform(Schema.Number, Schema.String, {
  strict: true,
  decode: (n) => n.toFixed(2),
  encode: (s) => Number(s)
})

export const Promo = Schema.Struct({
  ...PromoCode.fields,
  value: DecimalAsNumber,
  expires_at: Schema.NullOr(Schema.Date),
  plan_ids: Schema.Array(Schema.Int)
}).annotations({ identifier: "Promo" })

// ---- payload fields whose failure is one Laravel message --------------------------------

/** An integer or null (null clears it, e.g. "no speed limit"). */
const nullableInteger = (field: string, min: number, max = 2_147_483_647) =>
  checkedField(
    Schema.NullOr(Schema.Number),
    (input) => {
      if (input === null) return Either.right(null)
      if (typeof input !== "number" || !Number.isInteger(input)) {
        return Either.left(`The ${label(field)} field must be an integer.`)
      }
      if (input < min) return Either.left(`The ${label(field)} field must be at least ${min}.`)
      if (input > max) return Either.left(`The ${label(field)} field must not be greater than ${max}.`)
      return Either.right(input)
    },
    { type: ["integer", "null"], minimum: min, maximum: max }
  )

/**
 * An amount as a decimal string ("9.99") or a JSON number, at most two decimals; in cents. A typed
 * client sends its cents back as the decimal string (`999` as `"9.99"`).
 */
const amount = (field: string) =>
  checkedField(
    Schema.Number,
    (input) => {
      if (typeof input !== "string" && typeof input !== "number") {
        return Either.left(`The ${label(field)} field must be a number.`)
      }
      return Option.match(parseCents(input), {
        onNone: () => Either.left(`The ${label(field)} field must be a non-negative amount with at most two decimals.`),
        onSome: Either.right
      })
    },
    {
      oneOf: [
        { type: "string", pattern: "^\\d{1,10}(\\.\\d{1,2})?$", examples: ["9.99"] },
        { type: "number", minimum: 0, examples: [9.99] }
      ]
    },
    formatCents
  )

/** An ISO 8601 timestamp or null. */
const nullableTimestamp = (field: string) =>
  checkedField(
    Schema.NullOr(Schema.DateFromSelf),
    (input) => {
      if (input === null) return Either.right(null)
      const date = typeof input === "string" && /^\d{4}-\d{2}-\d{2}/.test(input) ? new Date(input) : undefined
      return date && !Number.isNaN(date.getTime()) ? Either.right(date) : Either.left(`The ${label(field)} field must be a valid date.`)
    },
    { type: ["string", "null"], format: "date-time" }
  )

/** An array of ids. */
const idList = (field: string) =>
  checkedField(
    Schema.Array(Schema.Number),
    (input) => {
      if (!Array.isArray(input)) return Either.left(`The ${label(field)} field must be an array.`)
      const ids: Array<number> = []
      for (const item of input as ReadonlyArray<unknown>) {
        if (typeof item !== "number" || !Number.isInteger(item)) {
          return Either.left(`The ${label(field)} field must be an array of integers.`)
        }
        ids.push(item)
      }
      return Either.right(ids)
    },
    { type: "array", items: { type: "integer" } }
  )

/** A three-letter currency code, upper-cased ("usd" -> "USD"). */
const currency = (field: string) =>
  checkedField(
    Schema.String,
    (input) =>
      typeof input === "string" && /^[A-Za-z]{3}$/.test(input.trim())
        ? Either.right(input.trim().toUpperCase())
        : Either.left(`The ${label(field)} field must be a 3-letter currency code.`),
    { type: "string", pattern: "^[A-Za-z]{3}$" }
  )

const optional = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.optional(schema)

const ANY_INT = { min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }

// ---- payloads ------------------------------------------------------------------------

export const ValidatePromoPayload = Body({
  code: string("code", { max: 64 }),
  plan_id: integer("plan_id", ANY_INT),
  cycle_id: integer("cycle_id", ANY_INT)
})

const planPayloadFields = {
  description: optional(string("description", { min: 0, max: 10_000 })),
  bandwidth_limit_gb: optional(integer("bandwidth_limit_gb", { min: 0 })),
  speed_limit_mbps: optional(nullableInteger("speed_limit_mbps", 1)),
  trial_days: optional(integer("trial_days", { min: 0, max: 3650 })),
  device_limit: optional(integer("device_limit", { min: 0, max: 10_000 })),
  usage_reset: optional(oneOf("usage_reset", USAGE_RESETS)),
  // [D104]: `throttle_mbps` goes with `throttle` only (checked against the plan by the catalogue);
  // the document lists `throttle` first so that an example built from it alone is a valid pair
  quota_action: optional(
    oneOf("quota_action", [...QUOTA_ACTIONS].reverse()).annotations({
      description: "`suspend` (default): over the quota the devices leave the nodes; `throttle`: they stay at `throttle_mbps`."
    })
  ),
  throttle_mbps: optional(
    nullableInteger("throttle_mbps", 1, 10_000).annotations({
      description: "Mbps over the quota; required when `quota_action` is (or stays) `throttle`, absent or null with `suspend` (422)."
    })
  ),
  is_active: optional(boolean("is_active"))
}

export const CreatePlanPayload = Body({ name: string("name", { max: 255 }), ...planPayloadFields })
export const UpdatePlanPayload = Body({ name: optional(string("name", { max: 255 })), ...planPayloadFields })

export const CreateCyclePayload = Body({
  name: string("name", { max: 255 }),
  duration_days: integer("duration_days", { min: 1, max: 36_500 }),
  price: amount("price"),
  currency: currency("currency")
})

export const CreatePromoPayload = Body({
  code: string("code", { max: 64 }),
  type: oneOf("type", ["percentage", "fixed"]),
  value: amount("value"),
  expires_at: optional(nullableTimestamp("expires_at")),
  max_uses: optional(nullableInteger("max_uses", 0)),
  max_uses_per_user: optional(nullableInteger("max_uses_per_user", 1)),
  plan_ids: optional(idList("plan_ids"))
})

// ---- groups --------------------------------------------------------------------------

const PlanPath = Schema.Struct({ plan: IdParam })

/** `GET /v1/plans`: the envelope of the active plans (the catalogue cache encodes with it too). */
export const PlanListResponse = Ok(Schema.Array(PublicPlan), { identifier: "PlanList" })

/** Public catalogue: plans, cycles, promo validation ([D31]-[D33]). */
export class CatalogApi extends HttpApiGroup.make("catalog")
  .annotate(OpenApi.Description, "Plans, billing cycles and promo codes.")
  .add(
    HttpApiEndpoint.get("listPlans", "/plans")
      .annotateContext(
        describe(
          "List plans",
          "The active plans with their limits (bandwidth, devices, speed); a plan's billing cycles are at `GET /v1/plans/{plan}/cycles`. No credential."
        )
      )
      .addSuccess(PlanListResponse)
  )
  .add(
    HttpApiEndpoint.get("getPlan", "/plans/:plan")
      .annotateContext(describe("Get a plan", "One active plan with its cycles. An inactive or unknown plan is 404."))
      .setPath(PlanPath)
      .addSuccess(Ok(PlanWithCycles, { identifier: "PlanDetail" }))
  )
  .add(
    HttpApiEndpoint.get("listCycles", "/plans/:plan/cycles")
      .annotateContext(describe("List a plan's billing cycles", "The cycles (duration and price) of an active plan."))
      .setPath(PlanPath)
      .addSuccess(Ok(Schema.Array(PublicCycle), { identifier: "BillingCycleList" }))
  )
  .add(
    HttpApiEndpoint.get("getCycle", "/plan/cycles/:cycle")
      .annotateContext(describe("Get a billing cycle", "One cycle with its plan's id and name."))
      .setPath(Schema.Struct({ cycle: IdParam }))
      .addSuccess(Ok(CycleWithPlan, { identifier: "BillingCycleDetail" }))
  )
  .add(
    HttpApiEndpoint.post("validatePromo", "/promos/validate")
      .annotateContext(
        describe(
          "Check a promo code",
          "Answers the discount and discounted price of a code for a plan and cycle. An unknown, expired, used-up or inapplicable code is 422 `Invalid or expired promo code.`. Rate limited."
        )
      )
      .setPayload(ValidatePromoPayload)
      .addSuccess(Ok(PromoValidation, { identifier: "PromoValidationResult" }))
      .addError(errorEnvelope(PromoInvalid))
      .middleware(PromoValidateRateLimit)
  ) {}

/** `/v1/admin/plans...`, `/v1/admin/promos` ([D70]). */
export class CatalogAdminApi extends HttpApiGroup.make("catalogAdmin")
  .annotate(OpenApi.Description, "Plans, cycles and promo codes, for admins.")
  .add(
    HttpApiEndpoint.post("createPlan", "/admin/plans")
      .annotateContext(describe("Create a plan (admin)", "A new plan with its limits; add billing cycles with `POST /v1/admin/plans/{plan}/cycles`."))
      .setPayload(CreatePlanPayload)
      .addSuccess(Ok(Plan, { identifier: "AdminPlanCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.put("updatePlan", "/admin/plans/:plan")
      .annotateContext(describe("Update a plan (admin)", "Changes the fields present. A change of limits reaches every node serving the plan's devices."))
      .setPath(PlanPath)
      .setPayload(UpdatePlanPayload)
      .addSuccess(Ok(Plan, { identifier: "AdminPlanUpdated" }))
  )
  .add(
    HttpApiEndpoint.post("createCycle", "/admin/plans/:plan/cycles")
      .annotateContext(
        describe("Add a billing cycle (admin)", 'A duration in days and a price (a decimal string such as `"9.99"`, or a number) in a three-letter currency.')
      )
      .setPath(PlanPath)
      .setPayload(CreateCyclePayload)
      .addSuccess(Ok(PublicCycle, { identifier: "AdminBillingCycleCreated", status: 201 }))
  )
  .add(
    HttpApiEndpoint.post("createPromo", "/admin/promos")
      .annotateContext(describe("Create a promo code (admin)", "A `percentage` (0-100) or `fixed` discount, optionally limited in time, uses and plans."))
      .setPayload(CreatePromoPayload)
      .addSuccess(Ok(Promo, { identifier: "AdminPromoCreated", status: 201 }))
  )
  .middlewareEndpoints(AdminAuthentication) {}
