import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { PlanMembers } from "../services/PlanMembers.ts"
import type { Subscription } from "../services/Domain.ts"
import { Services as Subscriptions } from "../services/Services.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig, GRACE_SPEED_MBPS_DEFAULT } from "../platform/Config.ts"
import { Forbidden, NotFound, ValidationError } from "../platform/Errors.ts"
import { anchorDaysStartingIn, isOverLimit } from "./Bandwidth.ts"
import { Credentials } from "./Credentials.ts"
import { BandwidthExceeded, PlanExcludesServer, ServiceSuspended } from "./Errors.ts"
import { isCredentialKey, OpenVpnEntries, OVPN_KEY_PREFIX, OVPN_ROTATED_KEY_PREFIX } from "./OpenVpnEntries.ts"
import { PeerChanges } from "./PeerChanges.ts"
import { type Allowance, nodeEntry, refusedOverQuota, speedOf } from "./NodeEntries.ts"
import { type Peer, Peers, type ServerPeer } from "./Peers.ts"
import { type Protocol, type ServerRow, Servers } from "./Servers.ts"
import { Usage } from "./Usage.ts"
import type { ServerId, UserId } from "../platform/Ids.ts"

/** issue 27: the peers of one page of the streamed full node list */
export const NODE_LIST_PAGE = 1000

/** an entry of the full node list: a peer ([D54]) or an OpenVPN credential ([D106]) */
export type NodeListEntry = Effect.Effect.Success<ReturnType<Access["nodeSync"]>>["peers"][number]

/**
 * Who may use which server ([D51], [D52], [D54]): the caller's current service must grant the
 * server (else 403); to get a config or connect it must also be active and under the limit
 * of its current quota period ([D95]) (else 423 for users, `enabled: false` / refused for nodes).
 */
export class Access extends Effect.Service<Access>()("vpn/Access", {
  effect: Effect.gen(function* () {
    const subscriptions = yield* Subscriptions
    const servers = yield* Servers
    const usage = yield* Usage
    const peers = yield* Peers
    const credentials = yield* Credentials
    const clock = yield* AppClock
    const changes = yield* PeerChanges
    const members = yield* PlanMembers
    const credentialRows = yield* OpenVpnEntries
    const graceMbps = (yield* AppConfig).graceSpeedMbps ?? GRACE_SPEED_MBPS_DEFAULT
    /** [D124]: a service in grace keeps working, at GRACE_SPEED_MBPS (or its own limit when lower) */
    const inGrace = (speed: number | null, grace: boolean) => (!grace ? speed : speed === null ? graceMbps : Math.min(speed, graceMbps))
    /** [D124]: what may connect and download: an active service, or one in grace */
    const connects = (status: string) => status === "active" || status === "grace"

    const granting = (userId: UserId, serverId: ServerId) =>
      Effect.gen(function* () {
        const current = yield* subscriptions.current(userId)
        if (Option.isNone(current) || !(yield* servers.grants(serverId, current.value.plan.id))) {
          return yield* Effect.fail(new PlanExcludesServer())
        }
        return current.value
      })

    /** [D95]: over the limit in the service's current period (of its plan's reset kind) */
    const overLimit = (service: Subscription) =>
      service.plan.bandwidthLimitGb === 0
        ? Effect.succeed(false)
        : Effect.map(usage.currentTotals([service]), (used) => isOverLimit(used.get(service.id) ?? 0, service.plan.bandwidthLimitGb))

    /**
     * 423 for a suspended service, or one over the quota of a `suspend` plan ([D104]): what a
     * download or a connection needs; the speed its devices get ([D103])
     */
    const usable = (service: Subscription): Effect.Effect<number | null, ServiceSuspended | BandwidthExceeded> =>
      !connects(service.status)
        ? Effect.fail(new ServiceSuspended())
        : Effect.flatMap(overLimit(service), (over) =>
            refusedOverQuota(service.plan, over)
              ? Effect.fail(new BandwidthExceeded())
              : Effect.succeed(inGrace(speedOf(service.plan, over), service.status === "grace"))
          )

    /**
     * A user's way to a server, in the order of [D11]: an unknown server (or one of another
     * protocol) 404, not granted by the current service 403. Two queries on the way through.
     */
    type Reached = Effect.Effect<
      { readonly server: ServerRow; readonly peer: Option.Option<Peer> },
      NotFound | PlanExcludesServer | ServiceSuspended | BandwidthExceeded
    >
    type Located = Effect.Effect<{ readonly server: ServerRow; readonly service: Subscription }, NotFound | PlanExcludesServer>
    const locate = (userId: UserId, serverId: ServerId, protocol?: Protocol) => {
      const ofProtocol = (server: ServerRow) => protocol === undefined || server.protocol === protocol
      // issue 27: a chain of steps on the downloads' hot path (no generator)
      return Effect.flatMap(
        subscriptions.current(userId),
        (current): Located =>
          Option.isNone(current)
            ? Effect.flatMap(
                servers.find(serverId),
                (server): Located => Effect.fail(Option.isNone(server) || !ofProtocol(server.value) ? new NotFound() : new PlanExcludesServer())
              )
            : Effect.flatMap(
                servers.findGranted(serverId, current.value.plan.id),
                (found): Located =>
                  Option.isNone(found) || !ofProtocol(found.value.server)
                    ? Effect.fail(new NotFound())
                    : !found.value.granted
                      ? Effect.fail(new PlanExcludesServer())
                      : Effect.succeed({ server: found.value.server, service: current.value })
              )
      )
    }

    /**
     * the users among `userIds` whose service may connect to the server now, with the speed it
     * gives them ([D103], [D104]): three set-based queries
     */
    const connectableUsers = (serverId: ServerId, userIds: ReadonlyArray<number>) =>
      Effect.gen(function* () {
        const allowed = new Map<number, Allowance>()
        if (userIds.length === 0) return allowed as ReadonlyMap<number, Allowance>
        const granted = new Set(yield* servers.planIdsOf(serverId))
        const current = yield* subscriptions.currentOf(userIds)
        const services = [...current.values()].filter((s) => connects(s.status) && granted.has(s.plan.id))
        const used = yield* usage.currentTotals(services)
        for (const s of services) {
          const over = isOverLimit(used.get(s.id) ?? 0, s.plan.bandwidthLimitGb)
          if (!refusedOverQuota(s.plan, over)) allowed.set(s.userId, { speedLimitMbps: inGrace(speedOf(s.plan, over), s.status === "grace") })
        }
        return allowed as ReadonlyMap<number, Allowance>
      })

    /**
     * issue 27: `connectableUsers` for one page of the full list, the server's grants read once
     * for the whole list, each owner's current service read lean: the same allowances
     */
    const pageAllowances = (granted: ReadonlyArray<number>, list: ReadonlyArray<ServerPeer>) =>
      Effect.gen(function* () {
        const allowed = new Map<number, Allowance>()
        const userIds = [...new Set(list.flatMap((p) => (p.held ? [] : [p.userId])))]
        const services = [...(yield* subscriptions.activeOnPlansOf(userIds, granted)).values()]
        // an unlimited plan is never over ([D95]): its usage is not read
        const used = yield* usage.currentTotals(services.filter((s) => s.plan.bandwidthLimitGb !== 0))
        for (const s of services) {
          const over = isOverLimit(used.get(s.id) ?? 0, s.plan.bandwidthLimitGb)
          if (!refusedOverQuota(s.plan, over)) allowed.set(s.userId, { speedLimitMbps: inGrace(speedOf(s.plan, over), s.grace) })
        }
        return allowed as ReadonlyMap<number, Allowance>
      })

    /**
     * [D54]: peers as the node is told them, `enabled` when their user is not on hold ([D91]) and
     * may connect, at their service's speed ([D103]); shaped by `nodeEntry` alone
     */
    const asNodePeers = (serverId: ServerId, list: ReadonlyArray<ServerPeer>) =>
      Effect.map(connectableUsers(serverId, [...new Set(list.flatMap((p) => (p.held ? [] : [p.userId])))]), (allowed) =>
        list.map((p) => nodeEntry(p, allowed.get(p.userId)))
      )

    const isOpenVpn = (serverId: ServerId) => Effect.map(servers.find(serverId), (found) => Option.isSome(found) && found.value.protocol === "openvpn")

    /**
     * [D106]: an OpenVPN server's entries: every credential of the users its plans serve
     * (`everything`), or of the changed users and usernames; usernames gone as removed
     */
    const openvpnEntries = (serverId: ServerId, everything: boolean, userIds: ReadonlyArray<number>, usernames: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const users = everything ? yield* members.usersOnPlans(yield* servers.planIdsOf(serverId)) : userIds
        const rows = yield* credentialRows.of(users, everything ? [] : usernames)
        const allowed = yield* connectableUsers(serverId, [...new Set(rows.flatMap((r) => (r.held ? [] : [r.user_id])))])
        const present = new Set(rows.map((r) => r.username))
        return [
          ...rows.map((r) => ({ username: r.username, enabled: allowed.has(r.user_id), speed_limit_mbps: allowed.get(r.user_id)?.speedLimitMbps ?? null })),
          ...usernames.filter((u) => !present.has(u)).map((username) => ({ username, removed: true as const }))
        ]
      })

    /**
     * [D92]: the node's list with its revision: everything, or what changed after `since` (removed
     * keys as `{public_key, removed: true}`); 422 `errors.since` for a cursor this log cannot answer.
     */
    const nodeSync = (serverId: ServerId, since: string | undefined) =>
      Effect.gen(function* () {
        const today = (yield* clock.now).toISOString().slice(0, 10)
        const state = yield* changes.state(today)
        yield* servers.seen(serverId)
        if (since === undefined) {
          if (yield* isOpenVpn(serverId)) return { peers: yield* openvpnEntries(serverId, true, [], []), revision: state.head }
          return { peers: yield* asNodePeers(serverId, yield* peers.ofServer(serverId)), revision: state.head }
        }
        const after = /^\d{1,15}$/.test(since) ? Number(since) : Number.NaN
        if (!(after <= state.head && after >= state.oldest)) {
          return yield* Effect.fail(ValidationError.field("since", "The since field is unknown or too old: fetch the full list."))
        }
        if (after === state.head) return { peers: [], revision: state.head }
        const changed = yield* changes.forServer(serverId, after, state.head)
        // the server's grants changed: every peer; a plan's limits: its members' (issue 34)
        let everything = changed.everything
        let userIds = changed.planIds.length === 0 ? changed.userIds : [...changed.userIds, ...(yield* members.usersOnPlans(changed.planIds))]
        if (!everything && after < state.tick) {
          // [D95]: a day started since the cursor, and quota periods with it: a calendar month
          // (`monthly` plans, and every anchor day) is every peer; otherwise the users whose
          // `billing_day` periods started on the days since
          const from = yield* changes.dayOf(after)
          if (Option.isNone(from) || from.value.slice(0, 7) !== today.slice(0, 7)) everything = true
          else userIds = [...userIds, ...(yield* subscriptions.usersAnchoredOn(anchorDaysStartingIn(from.value, today)))]
        }
        // [D106]: an OpenVPN server's list names credentials (log keys `ovpn:<username>`); issue
        // 34: a replaced secret (`ovpn-rotated:<username>`) is the username's entry, and named in
        // `rotated`: the agent ends the sessions opened with the old one
        const rotated = [...new Set(changed.keys.filter((k) => k.startsWith(OVPN_ROTATED_KEY_PREFIX)).map((k) => k.slice(OVPN_ROTATED_KEY_PREFIX.length)))]
        const usernames = [...new Set([...changed.keys.filter((k) => k.startsWith(OVPN_KEY_PREFIX)).map((k) => k.slice(OVPN_KEY_PREFIX.length)), ...rotated])]
        if (yield* isOpenVpn(serverId)) {
          const entries = yield* openvpnEntries(serverId, everything, userIds, usernames)
          // only usernames this server serves (listed, enabled or not)
          const listed = new Set(entries.flatMap((e) => ("removed" in e ? [] : [e.username])))
          const ended = rotated.filter((u) => listed.has(u))
          return { peers: entries, revision: state.head, ...(ended.length === 0 ? {} : { rotated: ended }) }
        }
        const keys = changed.keys.filter((k) => !isCredentialKey(k))
        const list = everything ? yield* peers.ofServer(serverId) : yield* peers.someOfServer(serverId, keys, userIds)
        const present = new Set(list.map((p) => p.publicKey))
        const removed = keys.filter((k) => !present.has(k)).map((k) => ({ public_key: k, removed: true as const }))
        return { peers: [...(yield* asNodePeers(serverId, list)), ...removed], revision: state.head }
      })

    /**
     * issue 27: the full list as `nodeSync` answers it without `since` (the same entries in the
     * same order, the same revision), in pages of `NODE_LIST_PAGE` peers by key, each page its own
     * queries: what a streamed answer writes as it reads. The first page is read here (a failure
     * is an error answer, not a cut one); an OpenVPN server's credentials are one page.
     */
    const nodeFull = (serverId: ServerId) =>
      Effect.gen(function* () {
        const today = (yield* clock.now).toISOString().slice(0, 10)
        const state = yield* changes.state(today)
        yield* servers.seen(serverId)
        if (yield* isOpenVpn(serverId)) {
          const entries: ReadonlyArray<NodeListEntry> = yield* openvpnEntries(serverId, true, [], [])
          return { revision: state.head, pages: Stream.make(entries) }
        }
        // the server's grants once for the whole list (a grant changed meanwhile is a change the
        // node's next `?since=` poll answers, [D92])
        const granted = yield* servers.planIdsOf(serverId)
        // issue 27: the peers' pages follow each other by key (each starts after the last id of
        // the one before): the next page of peers is read while this page's owners and their
        // usage are (on another connection), and the page after this one's entries are made while
        // this one is written. One page's owners at a time: two at once was no faster on this
        // 2-core machine and doubled the RSS the list's garbage leaves (benchmarks.md, issue 27).
        // At most five pages are held.
        const peerPage = (after: number) =>
          Effect.map(
            peers.pageOfServer(serverId, after, NODE_LIST_PAGE),
            (found) => [found.peers, found.peers.length < NODE_LIST_PAGE ? Option.none<number>() : Option.some(found.last)] as const
          )
        const entriesOf = (list: ReadonlyArray<ServerPeer>) =>
          Effect.map(pageAllowances(granted, list), (allowed): ReadonlyArray<NodeListEntry> => list.map((p) => nodeEntry(p, allowed.get(p.userId))))
        const [firstPeers, next] = yield* peerPage(0)
        const first = yield* entriesOf(firstPeers)
        const rest = Option.match(next, {
          onNone: () => Stream.empty,
          onSome: (after) =>
            Stream.paginateEffect(after, peerPage).pipe(Stream.buffer({ capacity: 1 }), Stream.mapEffect(entriesOf), Stream.buffer({ capacity: 1 }))
        })
        return { revision: state.head, pages: Stream.concat(Stream.make(first), rest) }
      })

    return {
      nodeFull,
      /**
       * [D54]: the node's OpenVPN hook; 403 for credentials that are wrong or on hold ([D91]), and
       * for a user whose service may not connect to this server; [D116]: 403 from a server that is
       * not an OpenVPN one, before any credential is looked at
       */
      authenticate: (serverId: ServerId, username: string, password: string) =>
        Effect.gen(function* () {
          const server = yield* servers.find(serverId)
          if (Option.isNone(server) || server.value.protocol !== "openvpn") return yield* Effect.fail(new Forbidden())
          const userId = yield* credentials.verify(username, password)
          if (Option.isNone(userId)) return yield* Effect.fail(new Forbidden())
          const speed = yield* granting(userId.value, serverId).pipe(
            Effect.flatMap(usable),
            Effect.mapError(() => new Forbidden())
          )
          return { username, allowed: true as const, speed_limit_mbps: speed }
        }),
      nodeSync,
      locate,
      /**
       * issue 27: `reach` for the spec's WireGuard download, with the default device's peer: the
       * current service, then the server, its grant, the period's usage and the peer in one read
       * of this room. The same answers in the same order as `reach` (404, 403, then 423).
       */
      reachWireguard: (userId: UserId, serverId: ServerId) =>
        Effect.flatMap(subscriptions.current(userId), (current): Reached => {
          if (Option.isNone(current)) return Effect.map(locate(userId, serverId, "wireguard"), (found) => ({ server: found.server, peer: Option.none() }))
          const service = current.value
          return Effect.flatMap(clock.now, (now) =>
            Effect.flatMap(
              peers.downloadOf({ serverId, planId: service.plan.id, serviceId: service.id, period: usage.periodOf(service, now).start, userId }),
              (found): Reached => {
                if (Option.isNone(found) || found.value.server.protocol !== "wireguard") return Effect.fail(new NotFound())
                if (!found.value.granted) return Effect.fail(new PlanExcludesServer())
                if (!connects(service.status)) return Effect.fail(new ServiceSuspended())
                const over = service.plan.bandwidthLimitGb !== 0 && isOverLimit(found.value.usedBytes, service.plan.bandwidthLimitGb)
                if (refusedOverQuota(service.plan, over)) return Effect.fail(new BandwidthExceeded())
                return Effect.succeed({ server: found.value.server, peer: found.value.peer })
              }
            )
          )
        }),
      /**
       * [D122]: every server of these protocols the current service grants (by id), for a link
       * that serves them all: 403 when there is none (or no current service), then 423 as a
       * download of any of them would answer
       */
      grantedFor: (
        userId: UserId,
        protocols: ReadonlyArray<Protocol>
      ): Effect.Effect<
        { readonly service: Subscription; readonly servers: ReadonlyArray<ServerRow> },
        PlanExcludesServer | ServiceSuspended | BandwidthExceeded
      > =>
        Effect.flatMap(subscriptions.current(userId), (current) =>
          Option.isNone(current)
            ? Effect.fail(new PlanExcludesServer())
            : Effect.flatMap(
                servers.grantedToPlan(current.value.plan.id),
                (
                  granted
                ): Effect.Effect<
                  { readonly service: Subscription; readonly servers: ReadonlyArray<ServerRow> },
                  PlanExcludesServer | ServiceSuspended | BandwidthExceeded
                > => {
                  const list = granted.filter((s) => protocols.includes(s.protocol))
                  return list.length === 0 ? Effect.fail(new PlanExcludesServer()) : Effect.as(usable(current.value), { service: current.value, servers: list })
                }
              )
        ),
      /** `locate`, then 423 for a suspended or over-limit service: what a config download needs */
      reach: (userId: UserId, serverId: ServerId, protocol: Protocol) =>
        Effect.flatMap(locate(userId, serverId, protocol), (found) => Effect.as(usable(found.service), found)),
      /** the spec's servers of the user's current plan (`[]` without a current service, [D51]) */
      serversOf: (userId: UserId) =>
        Effect.flatMap(subscriptions.current(userId), (current) => (Option.isNone(current) ? Effect.succeed([]) : servers.grantedToPlan(current.value.plan.id)))
    } as const
  }),
  dependencies: [
    Subscriptions.Default,
    Servers.Default,
    Usage.Default,
    Peers.Default,
    Credentials.Default,
    PeerChanges.Default,
    PlanMembers.Default,
    OpenVpnEntries.Default
  ]
}) {}
