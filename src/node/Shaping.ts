import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type { PeerEntry } from "./NodeClient.ts"
import { ifbOf, MAX_CLASS_ID, Tc, type TcFailed } from "./Tc.ts"
import { normaliseIps } from "./Wg.ts"

/**
 * [D103]: the agent's reconciler of speed limits. It keeps what the API wants (each enabled
 * peer's addresses and `speed_limit_mbps`, from full lists and `?since=` changes alike) and what
 * it has put on the device (one HTB class per limited peer, by its addresses), and issues the
 * difference through `Tc`: classes added, re-rated or removed as peers change. Its first apply
 * replaces whatever shaping the device had; after a failed `tc` the next apply starts over the
 * same way. Peers without a limit are not shaped.
 */

/** `NODE_SHAPING` (default true): false on a node without `tc`; limits are then not enforced */
export const shapingEnabled = Config.boolean("NODE_SHAPING").pipe(Config.withDefault(true))

/** A limited peer as the device should shape it. */
export interface ShapeTarget {
  readonly addresses: ReadonlyArray<string>
  readonly mbps: number
}

interface Installed extends ShapeTarget {
  readonly id: number
}

/** Wanted classes by their addresses (a rotated key with the same address is the same class). */
export const wantedOf = (
  desired: ReadonlyMap<string, { readonly addresses: ReadonlyArray<string>; readonly mbps: number | null }>
): ReadonlyMap<string, ShapeTarget> => {
  const wanted = new Map<string, ShapeTarget>()
  for (const peer of desired.values()) {
    if (peer.mbps !== null && peer.addresses.length > 0) wanted.set(peer.addresses.join(","), { addresses: peer.addresses, mbps: peer.mbps })
  }
  return wanted
}

export interface ShapeOutcome {
  readonly added: number
  readonly changed: number
  readonly removed: number
}

export interface Shaper {
  /** applies a list (`full`: the whole list, else the changes after a revision) */
  readonly apply: (entries: ReadonlyArray<PeerEntry>, full: boolean) => Effect.Effect<ShapeOutcome, TcFailed>
}

/** The shaper of one device (the WireGuard interface). */
export const makeShaper = (dev: string) =>
  Effect.gen(function* () {
    const tc = yield* Tc
    const lock = yield* Effect.makeSemaphore(1)
    const desired = new Map<string, { addresses: ReadonlyArray<string>; mbps: number | null }>()
    const installed = new Map<string, Installed>()
    let fresh = true

    const freeId = () => {
      const taken = new Set([...installed.values()].map((c) => c.id))
      for (let id = 1; id <= MAX_CLASS_ID; id++) if (!taken.has(id)) return id
      return undefined
    }

    const reconcile = Effect.gen(function* () {
      if (fresh) {
        yield* tc.reset(dev)
        installed.clear()
        fresh = false
      }
      const wanted = wantedOf(desired)
      let added = 0
      let changed = 0
      let removed = 0
      for (const [key, cls] of [...installed]) {
        if (wanted.has(key)) continue
        yield* tc.removeClass(dev, cls.id)
        installed.delete(key)
        removed++
      }
      for (const [key, target] of wanted) {
        const have = installed.get(key)
        if (have !== undefined) {
          if (have.mbps === target.mbps) continue
          yield* tc.setRate(dev, have.id, target.mbps)
          installed.set(key, { ...have, mbps: target.mbps })
          changed++
          continue
        }
        const id = freeId()
        if (id === undefined) break
        yield* tc.setClass(dev, id, target.mbps, target.addresses)
        installed.set(key, { ...target, id })
        added++
      }
      return { added, changed, removed }
    })

    const apply = (entries: ReadonlyArray<PeerEntry>, full: boolean) =>
      lock.withPermits(1)(
        Effect.suspend(() => {
          if (full) desired.clear()
          for (const peer of entries) {
            if (peer.removed === true || peer.enabled !== true || peer.allowed_ips === undefined) desired.delete(peer.public_key)
            else desired.set(peer.public_key, { addresses: normaliseIps(peer.allowed_ips), mbps: peer.speed_limit_mbps ?? null })
          }
          // a failed command leaves the device unknown: the next apply replaces it whole
          return Effect.tapError(reconcile, () =>
            Effect.sync(() => {
              fresh = true
            })
          )
        })
      )

    return { apply } satisfies Shaper
  })

/**
 * The agent's shaper as `NODE_SHAPING` says: `{ shaper }` on the real `tc`, or nothing, said once
 * in the log (speed limits are then not enforced on this node). A bad value is a config error.
 */
export const shaperFor = (dev: string) =>
  Effect.gen(function* () {
    if (!(yield* shapingEnabled)) {
      yield* Effect.logWarning("node agent: NODE_SHAPING=false: plan speed limits (speed_limit_mbps) are NOT enforced on this node")
      return {}
    }
    yield* Effect.logInfo(`node agent: shaping ${dev} with tc (HTB; ingress through ${ifbOf(dev)})`)
    return { shaper: yield* Effect.provide(makeShaper(dev), Tc.Live) }
  })
