import * as Schema from "effect/Schema"
import type { Cycle, Plan, QuotaAction, UsageReset } from "../catalog/Domain.ts"
import { PlanId, ServiceId, UserId } from "../platform/Ids.ts"
import { leanRow } from "../platform/LeanRow.ts"

/** [D124]: `grace`: an auto-renewing service past `expires_at` while its renewal is retried (until `grace_until`) */
export const SERVICE_STATUSES = ["pending", "active", "grace", "suspended", "expired", "cancelled"] as const
export const ServiceStatus = Schema.Literal(...SERVICE_STATUSES)
/** what an admin may set ([D70]): `grace` is the dunning's alone ([D124]) */
export const ADMIN_SERVICE_STATUSES = ["pending", "active", "suspended", "expired", "cancelled"] as const
export type ServiceStatus = typeof ServiceStatus.Type

/** A row of `services`, the table this room owns. */
export const ServiceRecord = Schema.Struct({
  id: ServiceId,
  user_id: UserId,
  plan_id: PlanId,
  cycle_id: Schema.Int,
  status: ServiceStatus,
  starts_at: Schema.DateFromSelf,
  expires_at: Schema.DateFromSelf,
  auto_renew: Schema.Boolean,
  /** [D124]: set while in grace: the last retry of the renewal */
  grace_until: Schema.NullOr(Schema.DateFromSelf)
})
export type ServiceRecord = typeof ServiceRecord.Type

/** A service with its plan and cycle (from the catalogue): what the routes and VPN access read. */
export interface Subscription {
  readonly id: ServiceId
  readonly userId: UserId
  readonly status: ServiceStatus
  readonly startsAt: Date
  readonly expiresAt: Date
  readonly autoRenew: boolean
  /** [D124]: while in grace, until when (the renewal's last retry); else null */
  readonly graceUntil: Date | null
  readonly plan: {
    readonly id: number
    readonly name: string
    readonly bandwidthLimitGb: number
    readonly speedLimitMbps: number | null
    /** [D90]: 0 = unlimited */
    readonly deviceLimit: number
    /** [D95]: when the quota starts again (periods anchored on `startsAt` for `billing_day` and `never`) */
    readonly usageReset: UsageReset
    /** [D104]: over the quota, off the node (`suspend`) or at `throttleMbps` (`throttle`) */
    readonly quotaAction: QuotaAction
    readonly throttleMbps: number | null
  }
  readonly cycle: {
    readonly id: number
    readonly name: string
    readonly durationDays: number
    readonly price: string
    readonly currency: string
  }
}

/**
 * What a node's usage report needs of a current service (issue 27): its quota period's anchor
 * ([D95]) and what a quota notice names ([D96]); no cycle, status or expiry to read and decode.
 */
export interface ServiceQuota {
  readonly id: ServiceId
  readonly userId: UserId
  readonly startsAt: Date
  readonly plan: Pick<Subscription["plan"], "id" | "name" | "bandwidthLimitGb" | "usageReset">
}

/** The columns of `services` a `ServiceQuota` is read from. */
export const ServiceQuotaRecord = ServiceRecord.pick("id", "user_id", "plan_id", "starts_at")
export type ServiceQuotaRecord = typeof ServiceQuotaRecord.Type

/** a catalogue plan as a service carries it */
export const planOf = (plan: Plan): Subscription["plan"] => ({
  id: plan.id,
  name: plan.name,
  bandwidthLimitGb: plan.bandwidth_limit_gb,
  speedLimitMbps: plan.speed_limit_mbps,
  deviceLimit: plan.device_limit,
  usageReset: plan.usage_reset,
  quotaAction: plan.quota_action,
  throttleMbps: plan.throttle_mbps
})

export const subscription = (s: ServiceRecord, plan: Plan, cycle: Cycle): Subscription => ({
  id: s.id,
  userId: s.user_id,
  status: s.status,
  startsAt: s.starts_at,
  expiresAt: s.expires_at,
  autoRenew: s.auto_renew,
  graceUntil: s.grace_until,
  plan: planOf(plan),
  cycle: { id: cycle.id, name: cycle.name, durationDays: cycle.duration_days, price: cycle.price, currency: cycle.currency }
})

/** issue 27: a current service that is active, lean: what a node's list needs of it */
export const ActiveOnPlan = leanRow("ActiveOnPlan", { id: "int", user_id: "int", plan_id: "int", starts_at: "date", status: "string" })
/** [D124] `grace`: connected, at GRACE_SPEED_MBPS */
export type ActiveService = Pick<Subscription, "id" | "userId" | "startsAt" | "plan"> & { readonly grace: boolean }

export const NewService = Schema.Struct({
  userId: UserId,
  planId: PlanId,
  cycleId: Schema.Int,
  status: ServiceStatus,
  startsAt: Schema.DateFromSelf,
  expiresAt: Schema.DateFromSelf,
  autoRenew: Schema.Boolean
})
export type NewService = typeof NewService.Type

/** A service that a renewal invoice is due for ([D80]). */
export const RenewalCandidate = ServiceRecord.pick("id", "user_id", "plan_id", "cycle_id", "expires_at")
export type RenewalCandidate = typeof RenewalCandidate.Type

/** [D108]: a downgrade waiting for the period's end, as service responses show it */
export interface ScheduledChange {
  readonly plan: { readonly id: number; readonly name: string }
  readonly cycle: { readonly id: number; readonly name: string; readonly duration_days: number; readonly price: string }
  readonly effective_at: string
}

/** [D111] [D108]: what a service response adds: `cancel_at` and `scheduled_change` */
export interface ServiceSchedule {
  readonly cancel_at: string | null
  readonly scheduled_change: ScheduledChange | null
}

export const noSchedule: ServiceSchedule = { cancel_at: null, scheduled_change: null }
