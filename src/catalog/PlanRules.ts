import * as Effect from "effect/Effect"
import { label } from "../platform/Fields.ts"
import { ValidationError } from "../platform/Errors.ts"
import type { PlanUpdate } from "./CatalogRepo.ts"
import type { Plan } from "./Domain.ts"

const required = `The ${label("throttle_mbps")} field is required when ${label("quota_action")} is throttle.`
const prohibited = `The ${label("throttle_mbps")} field is prohibited unless ${label("quota_action")} is throttle.`

/**
 * [D104]: `throttle_mbps` goes with `quota_action: throttle` and only with it. The changes are
 * read over the plan as it is (none: a new plan): a `throttle` plan needs a speed (sent or kept),
 * a `suspend` plan takes none (422 `errors.throttle_mbps` when one is sent), and a plan switched
 * to `suspend` drops its speed. The database's check backs this up.
 */
export const withQuotaAction = <C extends PlanUpdate>(
  current: Pick<Plan, "quota_action" | "throttle_mbps"> | undefined,
  changes: C
): Effect.Effect<C, ValidationError> => {
  const action = changes.quota_action ?? current?.quota_action ?? "suspend"
  const sent = changes.throttle_mbps
  if (action === "suspend") {
    if (sent !== undefined && sent !== null) return Effect.fail(ValidationError.field("throttle_mbps", prohibited))
    return Effect.succeed(current?.throttle_mbps != null || sent === null ? { ...changes, throttle_mbps: null } : changes)
  }
  const speed = sent !== undefined ? sent : (current?.throttle_mbps ?? null)
  return speed === null ? Effect.fail(ValidationError.field("throttle_mbps", required)) : Effect.succeed(changes)
}
