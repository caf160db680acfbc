import { Context, Effect, Layer, Option } from "effect"
import { type Subscription, Subscriptions } from "../billing/Subscriptions.ts"
import { Forbidden, Locked } from "../http/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { isOverLimit, periodStart } from "./Bandwidth.ts"
import { Servers } from "./Servers.ts"
import { Usage } from "./Usage.ts"

export const PLAN_EXCLUDES_SERVER = "Your plan does not include this server."
export const SERVICE_SUSPENDED = "Service suspended."
export const LIMIT_EXCEEDED = "Bandwidth limit exceeded."

/**
 * Who may use which server ([D51], [D52], [D54]): the caller's current service must grant the
 * server (else 403); to get a config or connect it must also be active and under this
 * month's limit (else 423 for users, `enabled: false` / refused for nodes).
 */
export class Access extends Context.Tag("vpn/Access")<Access, {
  readonly granting: (userId: number, serverId: number) => Effect.Effect<Subscription, Forbidden>
  readonly connectable: (userId: number, serverId: number) => Effect.Effect<Subscription, Forbidden | Locked>
  /** the users among `userIds` who may connect to the server now */
  readonly connectableUsers: (serverId: number, userIds: ReadonlyArray<number>) => Effect.Effect<ReadonlySet<number>>
}>() {
  static readonly Live = Layer.effect(
    Access,
    Effect.gen(function*() {
      const subscriptions = yield* Subscriptions
      const servers = yield* Servers
      const usage = yield* Usage
      const clock = yield* AppClock

      const granting = (userId: number, serverId: number) =>
        Effect.gen(function*() {
          const current = yield* subscriptions.current(userId)
          if (Option.isNone(current)) return yield* Effect.fail(new Forbidden({ message: PLAN_EXCLUDES_SERVER }))
          if (!(yield* servers.grants(serverId, current.value.plan.id))) {
            return yield* Effect.fail(new Forbidden({ message: PLAN_EXCLUDES_SERVER }))
          }
          return current.value
        })

      const overLimit = (service: Subscription) =>
        service.plan.bandwidthLimitGb === 0
          ? Effect.succeed(false)
          : Effect.gen(function*() {
            const used = yield* usage.month(service.id, periodStart(yield* clock.now))
            return isOverLimit(used, service.plan.bandwidthLimitGb)
          })

      const connectable = (userId: number, serverId: number) =>
        Effect.gen(function*() {
          const service = yield* granting(userId, serverId)
          if (service.status !== "active") return yield* Effect.fail(new Locked({ message: SERVICE_SUSPENDED }))
          if (yield* overLimit(service)) return yield* Effect.fail(new Locked({ message: LIMIT_EXCEEDED }))
          return service
        })

      const connectableUsers = (serverId: number, userIds: ReadonlyArray<number>) =>
        Effect.gen(function*() {
          const allowed = new Set<number>()
          const services: Array<Subscription> = []
          const grantsByPlan = new Map<number, boolean>()
          for (const userId of new Set(userIds)) {
            const current = yield* subscriptions.current(userId)
            if (Option.isNone(current) || current.value.status !== "active") continue
            const planId = current.value.plan.id
            if (!grantsByPlan.has(planId)) grantsByPlan.set(planId, yield* servers.grants(serverId, planId))
            if (grantsByPlan.get(planId)) services.push(current.value)
          }
          const used = yield* usage.months(services.map((s) => s.id), periodStart(yield* clock.now))
          for (const s of services) {
            if (!isOverLimit(used.get(s.id) ?? 0, s.plan.bandwidthLimitGb)) allowed.add(s.userId)
          }
          return allowed as ReadonlySet<number>
        })

      return { granting, connectable, connectableUsers }
    })
  )
}
