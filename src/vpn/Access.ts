import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { Services as Subscriptions, type Subscription } from "../services/Services.ts"
import { Forbidden, Locked, NotFound } from "../platform/Errors.ts"
import { AppClock } from "../platform/Clock.ts"
import { isOverLimit, periodStart } from "./Bandwidth.ts"
import { type Protocol, type ServerRow, Servers } from "./Servers.ts"
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
  readonly connectable: (userId: number, serverId: number) => Effect.Effect<Subscription, Forbidden | Locked>
  /**
   * A user's way to a server, in the order of [D11]: an unknown server (or one of another
   * protocol) 404, not granted by the current service 403. Two queries on the way through
   * (issue 8: it was three).
   */
  readonly locate: (
    userId: number,
    serverId: number,
    protocol?: Protocol
  ) => Effect.Effect<{ readonly server: ServerRow; readonly service: Subscription }, NotFound | Forbidden>
  /** `locate`, then 423 for a suspended or over-limit service: what a config download needs */
  readonly reach: (
    userId: number,
    serverId: number,
    protocol: Protocol
  ) => Effect.Effect<{ readonly server: ServerRow; readonly service: Subscription }, NotFound | Forbidden | Locked>
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

      /** 423 for a suspended or over-limit service: what a download or a connection needs */
      const usable = (service: Subscription) =>
        service.status !== "active"
          ? Effect.fail(new Locked({ message: SERVICE_SUSPENDED }))
          : Effect.flatMap(overLimit(service), (over) =>
            over ? Effect.fail(new Locked({ message: LIMIT_EXCEEDED })) : Effect.void)

      const connectable = (userId: number, serverId: number) =>
        Effect.flatMap(granting(userId, serverId), (service) => Effect.as(usable(service), service))

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

      const locate = (userId: number, serverId: number, protocol?: Protocol) =>
        Effect.gen(function*() {
          const ofProtocol = (server: ServerRow) => protocol === undefined || server.protocol === protocol
          const current = yield* subscriptions.current(userId)
          if (Option.isNone(current)) {
            const server = yield* servers.find(serverId)
            if (Option.isNone(server) || !ofProtocol(server.value)) return yield* Effect.fail(new NotFound())
            return yield* Effect.fail(new Forbidden({ message: PLAN_EXCLUDES_SERVER }))
          }
          const found = yield* servers.findGranted(serverId, current.value.plan.id)
          if (Option.isNone(found) || !ofProtocol(found.value.server)) return yield* Effect.fail(new NotFound())
          if (!found.value.granted) return yield* Effect.fail(new Forbidden({ message: PLAN_EXCLUDES_SERVER }))
          return { server: found.value.server, service: current.value }
        })

      const reach = (userId: number, serverId: number, protocol: Protocol) =>
        Effect.flatMap(locate(userId, serverId, protocol), (found) => Effect.as(usable(found.service), found))

      return { connectable, locate, reach, connectableUsers }
    })
  )
}
