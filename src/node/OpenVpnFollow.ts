import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { PeersBatch } from "../vpn/NodeProtocol.ts"
import { OpenVpnManagement } from "./Management.ts"
import { startPush } from "./Watch.ts"

/**
 * [D106]: the node agent of an OpenVPN server with `OPENVPN_MANAGEMENT` set. It follows the
 * credentials its server serves through the push stream of [D105] (resumed by revision, with
 * backoff) and ends the open sessions of every username that is no longer enabled — disabled,
 * removed, or gone from a full list — with `kill <username>` on the management interface, within
 * a second of the commit. OpenVPN itself checks new connections (`openvpn-auth`).
 */

/** the usernames a batch takes away, given those enabled before it */
export const toKill = (batch: PeersBatch, enabled: ReadonlySet<string>): { readonly kill: ReadonlyArray<string>; readonly enabled: ReadonlySet<string> } => {
  const next = new Set(batch.full ? [] : enabled)
  const kill = new Set<string>()
  const listed = new Set<string>()
  for (const entry of batch.peers) {
    if (!("username" in entry)) continue
    listed.add(entry.username)
    if ("removed" in entry || !entry.enabled) {
      next.delete(entry.username)
      kill.add(entry.username)
    } else next.add(entry.username)
  }
  // a full list: whoever was enabled and is not listed any more has left
  if (batch.full) for (const name of enabled) if (!listed.has(name)) kill.add(name)
  return { kill: [...kill], enabled: next }
}

export const runOpenVpnAgent = (options: { readonly pollSeconds: number; readonly version: string }) =>
  Effect.gen(function*() {
    const management = yield* OpenVpnManagement
    let enabled: ReadonlySet<string> = new Set()
    let revision = Option.none<number>()
    const apply = (batch: PeersBatch) =>
      Effect.gen(function*() {
        const step = toKill(batch, enabled)
        for (const username of step.kill) {
          const outcome = yield* Effect.either(management.kill(username))
          if (outcome._tag === "Left") {
            // the revision is not taken: the stream reconnects and the change comes again
            return yield* Effect.fail(`management: kill ${username}: ${outcome.left.message}`)
          }
          if (outcome.right === "killed") yield* Effect.logInfo(`node agent: ended the OpenVPN sessions of ${username}`)
        }
        enabled = step.enabled
        revision = Option.some(batch.revision)
      })
    yield* startPush({
      pollSeconds: options.pollSeconds,
      version: options.version,
      apply,
      resumeFrom: Effect.sync(() => revision)
    })
    yield* Effect.logInfo("node agent: following this OpenVPN server's credentials (sessions ended through the management interface)")
    return yield* Effect.never
  }).pipe(Effect.scoped)
