import * as Effect from "effect/Effect"
import { DomainEvents } from "../events/DomainEvents.ts"
import { Notifications } from "../outbox/Notifications.ts"
import type { ServiceQuota } from "../services/Domain.ts"
import * as Bandwidth from "./Bandwidth.ts"

const PERCENTS = [80, 100] as const

/** [D96]: the thresholds (80 %, 100 % of the plan's quota) a period's usage crossed going from `before` to `after` bytes */
export const crossedThresholds = (bandwidthLimitGb: number, before: number, after: number): ReadonlyArray<80 | 100> => {
  const limit = Bandwidth.limitBytes(bandwidthLimitGb)
  if (limit === null) return []
  return PERCENTS.filter((percent) => {
    const threshold = (limit * percent) / 100
    return before < threshold && after >= threshold
  })
}

/** [D96]: the quota notices (a mail and a `usage.threshold` event) of a period crossing 80 % or 100 %. */
export class QuotaNotices extends Effect.Service<QuotaNotices>()("vpn/QuotaNotices", {
  effect: Effect.gen(function* () {
    const notifications = yield* Notifications
    const domainEvents = yield* DomainEvents

    /** [D96]: the quota notices of a period whose usage went from `before` to `after` bytes (once per period, [D95]) */
    const quotaNotices = (service: ServiceQuota, period: Bandwidth.Period, before: number, after: number) =>
      Effect.gen(function* () {
        const limit = Bandwidth.limitBytes(service.plan.bandwidthLimitGb)
        if (limit === null) return
        for (const percent of crossedThresholds(service.plan.bandwidthLimitGb, before, after)) {
          yield* notifications.notify({
            userId: service.userId,
            kind: percent === 80 ? "quota-80" : "quota-100",
            dedupeKey: `quota-${percent}:${service.id}:${Bandwidth.labelOf(service.plan.usageReset, period.start)}`,
            view: {
              service_id: service.id,
              plan_name: service.plan.name,
              used_gb: (after / 1024 ** 3).toFixed(2),
              limit_gb: service.plan.bandwidthLimitGb,
              percent: Math.floor((after / limit) * 100),
              period_start: Bandwidth.labelOf(service.plan.usageReset, period.start),
              reset_date: period.next
            }
          })
          // [D101]: with the notice, in the report's transaction
          yield* domainEvents.emit({
            type: "usage.threshold",
            data: {
              service_id: service.id,
              user_id: service.userId,
              threshold: percent,
              period: Bandwidth.labelOf(service.plan.usageReset, period.start),
              used_bytes: after,
              limit_bytes: limit
            }
          })
        }
      })

    return { quotaNotices } as const
  }),
  dependencies: [Notifications.Default]
}) {}
