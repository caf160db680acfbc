import type { Subscription } from "../services/Domain.ts"
import type { NodePeer, ServerPeer } from "./Peers.ts"

/** What a plan says about speed and the quota ([D103], [D104]). */
type PlanSpeed = Pick<Subscription["plan"], "speedLimitMbps" | "quotaAction" | "throttleMbps">

/** [D104]: over the quota of a `suspend` plan the service may not connect (nor download a config) */
export const refusedOverQuota = (plan: PlanSpeed, over: boolean): boolean => over && plan.quotaAction === "suspend"

/** [D104]: over the quota of a `throttle` plan: connected, at the throttle speed */
export const isThrottled = (plan: PlanSpeed, over: boolean): boolean => over && plan.quotaAction === "throttle"

/**
 * [D103], [D104]: the speed (Mbps, both ways) a service's devices get on every node: the plan's
 * limit (null: none), and when throttled `throttle_mbps`, or the plan's own limit if lower.
 */
export const speedOf = (plan: PlanSpeed, over: boolean): number | null => {
  if (!isThrottled(plan, over) || plan.throttleMbps === null) return plan.speedLimitMbps
  return plan.speedLimitMbps === null ? plan.throttleMbps : Math.min(plan.speedLimitMbps, plan.throttleMbps)
}

/** What a user's service allows on a node now; a user without one is not enabled there. */
export interface Allowance {
  readonly speedLimitMbps: number | null
}

/**
 * [D54], [D92], [D103]: the one shape of a node's peer entry, for the full list, the changes
 * after `?since=` and any stream of them: a peer is `enabled` when its user has an allowance,
 * at that allowance's speed (null: not shaped; a disabled peer has none).
 */
export const nodeEntry = (peer: ServerPeer, allowance: Allowance | undefined): typeof NodePeer.Type => ({
  public_key: peer.publicKey,
  allowed_ips: peer.address6 === null ? `${peer.address}/32` : `${peer.address}/32, ${peer.address6}/128`,
  enabled: allowance !== undefined,
  speed_limit_mbps: allowance?.speedLimitMbps ?? null
})
