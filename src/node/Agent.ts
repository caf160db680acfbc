import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { type CounterEntry, NodeClient, type PeerEntry } from "./NodeClient.ts"
import type { Shaper } from "./Shaping.ts"
import type { PeersBatch } from "../vpn/NodeProtocol.ts"
import { startPush } from "./Watch.ts"
import { type DumpPeer, normaliseIps, parseDump, Wg } from "./Wg.ts"

/**
 * The node agent of [D93]: keeps one WireGuard interface's peers equal to the API's enabled
 * peers ([D54], incrementally with [D92] when the API offers it) and reports the interface's
 * cumulative counters ([D94]). When the API is away it changes nothing on the interface (the
 * peers it has keep working) and retries with a growing delay, at most 60 s; totals that could
 * not be delivered are sent with a later report, and being cumulative they count once.
 */

/** the longest wait between two tries while the API is away ([D93]) */
export const MAX_BACKOFF_SECONDS = 60

export interface AgentOptions {
  readonly iface: string
  readonly pollSeconds: number
  /** [D103]: shapes the listed peers' speeds (absent: NODE_SHAPING=false) */
  readonly shaper?: Shaper
  /** what the agent reports it runs ([D105]) */
  readonly version?: string
  /** [D105]: counters go this often between polls (`NODE_REPORT_SECONDS`; default: with each poll only) */
  readonly reportSeconds?: number
}

/** What the agent remembers between polls. */
export interface AgentState {
  /** the enabled peers the API wants, by public key, with their allowed IPs; none before the first list */
  readonly desired: Option.Option<ReadonlyMap<string, ReadonlyArray<string>>>
  /** [D92]: the cursor of the last list, when the API gives one */
  readonly revision: Option.Option<string>
  /** totals of a report that was not delivered, for peers that have left the interface since */
  readonly undelivered: ReadonlyMap<string, CounterEntry>
}

export const initialState: AgentState = { desired: Option.none(), revision: Option.none(), undelivered: new Map() }

/** What one `wg set` changes: peers to add or re-address, and peers to remove. */
export interface PeerChangeSet {
  readonly set: ReadonlyArray<{ readonly publicKey: string; readonly allowedIps: ReadonlyArray<string> }>
  readonly remove: ReadonlyArray<string>
}

/** The peers the API wants on the interface: the enabled ones of a full list. */
export const desiredOf = (peers: ReadonlyArray<PeerEntry>): ReadonlyMap<string, ReadonlyArray<string>> => applyChanges(new Map(), peers)

/** [D92]: a list of changes applied to what was wanted (removed or not enabled: off the interface). */
export const applyChanges = (
  desired: ReadonlyMap<string, ReadonlyArray<string>>,
  changes: ReadonlyArray<PeerEntry>
): ReadonlyMap<string, ReadonlyArray<string>> => {
  const next = new Map(desired)
  for (const peer of changes) {
    if (peer.removed === true || peer.enabled !== true || peer.allowed_ips === undefined) next.delete(peer.public_key)
    else next.set(peer.public_key, normaliseIps(peer.allowed_ips))
  }
  return next
}

/** What to change so that the interface holds exactly the wanted peers. */
export const diffPeers = (desired: ReadonlyMap<string, ReadonlyArray<string>>, actual: ReadonlyArray<DumpPeer>): PeerChangeSet => {
  const present = new Map(actual.map((p) => [p.publicKey, p.allowedIps.join(",")]))
  const set = [...desired].filter(([key, ips]) => present.get(key) !== [...ips].sort().join(",")).map(([publicKey, allowedIps]) => ({ publicKey, allowedIps }))
  const remove = actual.filter((p) => !desired.has(p.publicKey)).map((p) => p.publicKey)
  return { set, remove }
}

/** The wait before the next try after `failures` failed polls in a row: doubling, at most 60 s. */
export const backoffSeconds = (failures: number, pollSeconds: number): number =>
  failures <= 0 ? pollSeconds : Math.min(MAX_BACKOFF_SECONDS, pollSeconds * 2 ** (failures - 1))

/** The counters report of a dump: every peer's totals, plus undelivered ones of peers gone since. */
export const reportOf = (actual: ReadonlyArray<DumpPeer>, undelivered: ReadonlyMap<string, CounterEntry>): ReadonlyArray<CounterEntry> => {
  const entries = new Map<string, CounterEntry>(undelivered)
  for (const p of actual) {
    entries.set(p.publicKey, { public_key: p.publicKey, rx_total: p.rx, tx_total: p.tx, latest_handshake: p.latestHandshake })
  }
  return [...entries.values()].filter((e) => e.rx_total > 0 || e.tx_total > 0)
}

export interface CycleOutcome {
  readonly added: number
  readonly removed: number
  readonly reported: number
  /** why the peers could not be synced (the API or `wg` failed): the agent backs off */
  readonly failure: Option.Option<string>
  /** why the counters were not delivered; they go with the next report (no back-off for this alone) */
  readonly reportFailure: Option.Option<string>
}

/**
 * One poll: report the counters of the interface, fetch the peer list (or its changes), and
 * apply the difference with `wg set`. A failed report does not stop the sync, and a failed list
 * changes nothing on the interface.
 */
export const cycle = (options: AgentOptions, state: Ref.Ref<AgentState>, newKey: Effect.Effect<string>) =>
  Effect.gen(function* () {
    const wg = yield* Wg
    const api = yield* NodeClient
    const before = yield* Ref.get(state)
    let reportFailure = Option.none<string>()

    const dumped = yield* Effect.either(Effect.map(wg.dump(options.iface), parseDump))
    if (dumped._tag === "Left") {
      const failure = Option.some(`${dumped.left.command}: ${dumped.left.message}`)
      return { added: 0, removed: 0, reported: 0, failure, reportFailure }
    }
    const actual = dumped.right

    // [D94]: cumulative totals, one key per report (a retry of it counts once)
    const report = reportOf(actual, before.undelivered)
    let reported = 0
    if (report.length > 0) {
      const key = yield* newKey
      const sent = yield* Effect.either(api.counters(report, key).pipe(Effect.retry({ times: 2, schedule: Schedule.spaced("300 millis") })))
      if (sent._tag === "Right") {
        reported = report.length
        yield* Ref.update(state, (s) => ({ ...s, undelivered: new Map() }))
      } else {
        reportFailure = Option.some(`counters: ${sent.left.message}`)
        yield* Ref.update(state, (s) => ({ ...s, undelivered: new Map(report.map((e) => [e.public_key, e])) }))
      }
    }

    // [D92]: the changes since the last revision when there is one, else the whole list
    const listed = yield* Effect.either(
      api.peers(Option.isSome(before.desired) ? before.revision : Option.none()).pipe(Effect.catchTag("SinceRefused", () => api.peers(Option.none())))
    )
    if (listed._tag === "Left") {
      return { added: 0, removed: 0, reported, failure: Option.some(`peers: ${listed.left.message}`), reportFailure }
    }
    const answer = listed.right
    const desired = answer.full || Option.isNone(before.desired) ? desiredOf(answer.peers) : applyChanges(before.desired.value, answer.peers)

    const changes = diffPeers(desired, actual)
    const applied = yield* Effect.either(
      Effect.gen(function* () {
        for (const key of changes.remove) yield* wg.set(options.iface, ["peer", key, "remove"])
        for (const peer of changes.set) {
          yield* wg.set(options.iface, ["peer", peer.publicKey, "allowed-ips", peer.allowedIps.join(",")])
        }
      })
    )
    // [D103]: the speeds follow the same list; a failed `tc` is logged and starts over next time
    if (options.shaper !== undefined) {
      const shaped = yield* Effect.either(options.shaper.apply(answer.peers, answer.full))
      if (shaped._tag === "Left") {
        yield* Effect.logWarning(`node agent: shaping: ${shaped.left.command}: ${shaped.left.message}; it is made again next time`)
      }
    }
    // when `wg set` fails the list is kept and the revision is not: the next poll asks for all of it
    yield* Ref.update(state, (s) => ({
      ...s,
      desired: Option.some(desired),
      revision: applied._tag === "Left" ? Option.none() : answer.revision
    }))
    return {
      added: changes.set.length,
      removed: changes.remove.length,
      reported,
      failure: applied._tag === "Left" ? Option.some(`${applied.left.command}: ${applied.left.message}`) : Option.none(),
      reportFailure
    }
  })

/**
 * [D105]: the counters alone, between polls (every `NODE_REPORT_SECONDS`): with changes pushed the
 * poll is rare, and the report interval bounds what a device uses past its quota. Totals not
 * delivered go with the next report, as in `cycle`.
 */
export const reportCounters = (options: AgentOptions, state: Ref.Ref<AgentState>, newKey: Effect.Effect<string>) =>
  Effect.gen(function* () {
    const wg = yield* Wg
    const api = yield* NodeClient
    const actual = parseDump(yield* wg.dump(options.iface).pipe(Effect.mapError((e) => `${e.command}: ${e.message}`)))
    const report = reportOf(actual, (yield* Ref.get(state)).undelivered)
    if (report.length === 0) return
    const sent = yield* Effect.either(api.counters(report, yield* newKey))
    yield* Ref.update(state, (s) => ({
      ...s,
      undelivered: sent._tag === "Right" ? new Map() : new Map(report.map((e) => [e.public_key, e]))
    }))
    if (sent._tag === "Left") return yield* Effect.fail(`counters: ${sent.left.message}`)
  })

/**
 * [D105]: one pushed batch applied to the interface (the whole list, or the changes after the
 * revision the agent holds). When `wg` fails the list is kept and the revision is not: the next
 * poll or stream asks for all of it.
 */
export const applyBatch = (options: AgentOptions, state: Ref.Ref<AgentState>, batch: PeersBatch) =>
  Effect.gen(function* () {
    const wg = yield* Wg
    const before = yield* Ref.get(state)
    // WireGuard entries only (an OpenVPN server's credentials are [D106]'s, see OpenVpnFollow.ts)
    const entries = batch.peers.flatMap((p) => ("public_key" in p ? [p] : []))
    const desired = batch.full || Option.isNone(before.desired) ? desiredOf(entries) : applyChanges(before.desired.value, entries)
    const applied = yield* Effect.either(
      Effect.gen(function* () {
        const changes = diffPeers(desired, parseDump(yield* wg.dump(options.iface)))
        for (const key of changes.remove) yield* wg.set(options.iface, ["peer", key, "remove"])
        for (const peer of changes.set) {
          yield* wg.set(options.iface, ["peer", peer.publicKey, "allowed-ips", peer.allowedIps.join(",")])
        }
        return changes
      })
    )
    // [D103]: the pushed speeds follow the same batch
    if (options.shaper !== undefined) {
      const shaped = yield* Effect.either(options.shaper.apply(entries, batch.full))
      if (shaped._tag === "Left") {
        yield* Effect.logWarning(`node agent: shaping: ${shaped.left.command}: ${shaped.left.message}; it is made again next time`)
      }
    }
    yield* Ref.set(state, {
      ...before,
      desired: Option.some(desired),
      revision: applied._tag === "Left" ? Option.none() : Option.some(String(batch.revision))
    })
    if (applied._tag === "Left") return yield* Effect.fail(`${applied.left.command}: ${applied.left.message}`)
    const { remove, set } = applied.right
    if (set.length > 0 || remove.length > 0) {
      yield* Effect.logInfo(`node agent: pushed revision ${batch.revision}: peers set ${set.length}, removed ${remove.length}`)
    }
  })

/**
 * The agent's loop: a cycle every `pollSeconds` (at most every 10 s while the push stream of
 * [D105] is down), backing off (at most 60 s) while cycles fail. Cycles and pushed batches take
 * turns on the interface.
 */
export const runAgent = (options: AgentOptions) =>
  Effect.gen(function* () {
    const state = yield* Ref.make(initialState)
    const newKey = Effect.sync(() => `node-agent-${crypto.randomUUID()}`)
    const lock = yield* Effect.makeSemaphore(1)
    const wg = yield* Wg
    const push = yield* startPush({
      pollSeconds: options.pollSeconds,
      version: options.version ?? "vpn-api",
      apply: (batch) =>
        lock
          .withPermits(1)(applyBatch(options, state, batch))
          .pipe(Effect.provideService(Wg, wg)),
      resumeFrom: Effect.map(Ref.get(state), (s) => (Option.isSome(s.desired) ? Option.map(s.revision, Number) : Option.none()))
    })
    if (options.reportSeconds !== undefined && options.reportSeconds < options.pollSeconds) {
      yield* lock
        .withPermits(1)(reportCounters(options, state, newKey))
        .pipe(
          Effect.catchAll((message) => Effect.logDebug(`node agent: ${message}; the totals go with the next report`)),
          Effect.provideService(Wg, wg),
          Effect.schedule(Schedule.spaced(Duration.seconds(options.reportSeconds))),
          Effect.forkScoped
        )
    }
    yield* Effect.logInfo(`node agent: syncing ${options.iface} every ${options.pollSeconds} s (every 10 s while the push stream is down)`)
    let failures = 0
    for (;;) {
      const outcome = yield* lock.withPermits(1)(cycle(options, state, newKey))
      if (Option.isSome(outcome.reportFailure)) {
        yield* Effect.logWarning(`node agent: ${outcome.reportFailure.value}; the totals go with the next report`)
      }
      if (Option.isSome(outcome.failure)) {
        failures++
        const wait = backoffSeconds(failures, options.pollSeconds)
        yield* Effect.logWarning(`node agent: ${outcome.failure.value}; the interface is kept as it is, next try in ${wait} s`)
        yield* Effect.sleep(Duration.seconds(wait))
      } else {
        if (failures > 0) yield* Effect.logInfo("node agent: the API answers again")
        failures = 0
        if (outcome.added > 0 || outcome.removed > 0) {
          yield* Effect.logInfo(`node agent: peers set ${outcome.added}, removed ${outcome.removed}`)
        }
        yield* Effect.sleep(Duration.seconds(yield* push.pollSeconds))
      }
    }
  }).pipe(Effect.scoped)
