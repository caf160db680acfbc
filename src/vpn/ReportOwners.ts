import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Services as Subscriptions } from "../services/Services.ts"
import { Credentials } from "./Credentials.ts"
import { Peers } from "./Peers.ts"
import { Servers } from "./Servers.ts"
import type { ServerId } from "../platform/Ids.ts"

/** What names an entry of a node's report: a WireGuard peer's key or an OpenVPN username. */
export interface ReportedPeer {
  readonly public_key?: string
  readonly username?: string
}

/**
 * [D116]: a node reports only what its server serves. A `public_key` entry belongs to its owner
 * only when it is one of this server's peers; a `username` entry only on an `openvpn` server whose
 * plans grant the user's current service. Anything else has no owner here, whether or not such a
 * user exists, so it is neither counted nor told apart from an unknown name.
 */
export class ReportOwners extends Effect.Service<ReportOwners>()("vpn/ReportOwners", {
  effect: Effect.gen(function* () {
    const peers = yield* Peers
    const credentials = yield* Credentials
    const servers = yield* Servers
    const subscriptions = yield* Subscriptions

    /** the owners of these usernames whose current service this OpenVPN server serves, by username */
    const servedUsernames = (serverId: ServerId, usernames: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const none = new Map<string, number>() as ReadonlyMap<string, number>
        if (usernames.length === 0) return none
        const server = yield* servers.find(serverId)
        if (Option.isNone(server) || server.value.protocol !== "openvpn") return none
        const byName = yield* credentials.usersOf(usernames)
        if (byName.size === 0) return none
        const granted = new Set(yield* servers.planIdsOf(serverId))
        const current = yield* subscriptions.currentOf([...byName.values()])
        return new Map(
          [...byName].filter(([, userId]) => {
            const service = current.get(userId)
            return service !== undefined && granted.has(service.plan.id)
          })
        ) as ReadonlyMap<string, number>
      })

    return {
      /** the owner of each entry on this node's server, by entry (entries it does not serve are absent) */
      ownersOf: (serverId: ServerId, entries: ReadonlyArray<ReportedPeer>) =>
        Effect.gen(function* () {
          const byKey = yield* peers.ownersOf(
            serverId,
            entries.flatMap((e) => e.public_key ?? [])
          )
          const byName = yield* servedUsernames(
            serverId,
            entries.flatMap((e) => e.username ?? [])
          )
          return entries.map((e) => (e.public_key !== undefined ? byKey.get(e.public_key) : byName.get(e.username ?? "")))
        })
    } as const
  }),
  dependencies: [Peers.Default, Credentials.Default, Servers.Default, Subscriptions.Default]
}) {}
