import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { PeersBatch } from "../vpn/NodeProtocol.ts"
import { backoffSeconds } from "./Agent.ts"
import { OpenVpnManagement } from "./Management.ts"
import { NodeClient } from "./NodeClient.ts"
import { startPush } from "./Watch.ts"

/**
 * [D106]: the node agent of an OpenVPN server with `OPENVPN_MANAGEMENT` set. It follows the
 * credentials its server serves through the push stream of [D105] (resumed by revision, with
 * backoff) and ends the open sessions of every username that is no longer enabled — disabled,
 * removed, or gone from a full list — with `kill <username>` on the management interface, within
 * a second of the commit. OpenVPN itself checks new connections (`openvpn-auth`).
 *
 * Issue 34: a username whose password was replaced (`rotated` in a batch) has its sessions ended
 * too, though it stays enabled: they were opened with the old password. And as the WireGuard
 * agent does ([D105]), it polls `GET /v1/node/peers` as a safety net: every `NODE_POLL_SECONDS`
 * with the stream up, at most every 10 s while it is down (backing off, at most 60 s, while the
 * API does not answer). Stream and poll take turns, and a batch no newer than the revision held
 * is skipped: a change is applied (a session killed) once.
 */

/** the usernames a batch takes away, given those enabled before it */
export const toKill = (batch: PeersBatch, enabled: ReadonlySet<string>): { readonly kill: ReadonlyArray<string>; readonly enabled: ReadonlySet<string> } => {
  const next = new Set(batch.full ? [] : enabled)
  // issue 34: sessions opened with a password that was replaced end, enabled or not
  const kill = new Set<string>(batch.rotated)
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
  Effect.gen(function* () {
    const management = yield* OpenVpnManagement
    const api = yield* NodeClient
    const lock = yield* Effect.makeSemaphore(1)
    let enabled: ReadonlySet<string> = new Set()
    let revision = Option.none<number>()
    const apply = (batch: PeersBatch) =>
      Effect.gen(function* () {
        // already applied (the stream and the poll overlap): nothing is killed twice
        if (!batch.full && Option.isSome(revision) && batch.revision <= revision.value) return
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
    const applyLocked = (batch: PeersBatch) => lock.withPermits(1)(apply(batch))
    const push = yield* startPush({
      pollSeconds: options.pollSeconds,
      version: options.version,
      apply: applyLocked,
      resumeFrom: Effect.sync(() => revision)
    })
    yield* Effect.logInfo(
      `node agent: following this OpenVPN server's credentials (sessions ended through the management interface); polling every ${options.pollSeconds} s (every 10 s while the push stream is down)`
    )
    // [D105]: the poll, the safety net of the stream
    const poll = Effect.suspend(() => api.credentials(revision)).pipe(
      Effect.catchTag("SinceRefused", () => api.credentials(Option.none())),
      Effect.mapError((e) => e.message),
      Effect.flatMap(applyLocked)
    )
    let failures = 0
    for (;;) {
      yield* Effect.sleep(Duration.seconds(failures > 0 ? backoffSeconds(failures, yield* push.pollSeconds) : yield* push.pollSeconds))
      const outcome = yield* Effect.either(poll)
      if (outcome._tag === "Left") {
        failures++
        yield* Effect.logWarning(`node agent: poll: ${outcome.left}; next try in ${backoffSeconds(failures, yield* push.pollSeconds)} s`)
      } else {
        if (failures > 0) yield* Effect.logInfo("node agent: the API answers again")
        failures = 0
      }
    }
  }).pipe(Effect.scoped)
