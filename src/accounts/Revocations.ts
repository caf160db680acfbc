import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { Notifications } from "../outbox/Notifications.ts"
import { AppClock } from "../platform/Clock.ts"
import { requestOrigin } from "../platform/RequestOrigin.ts"
import type { Principal } from "./Domain.ts"
import { ApiKeys } from "./ApiKeys.ts"
import { Tokens } from "./Tokens.ts"
import type { UserId } from "../platform/Ids.ts"

/**
 * What each recovery step revokes ([D114], rev. 3 of [D23], [D24], [D98]), and the security mail
 * that says so: a password reset revokes every session and every API key; a password change every
 * other session and every API key; signing out everywhere every session (the keys stay: they are
 * listed and revoked on their own). Each runs inside the caller's transaction; the caller wakes
 * the outbox after the commit.
 */
export class Revocations extends Effect.Service<Revocations>()("accounts/Revocations", {
  effect: Effect.gen(function* () {
    const tokens = yield* Tokens
    const apiKeys = yield* ApiKeys
    const notifications = yield* Notifications
    const clock = yield* AppClock

    /** the mail says how many sessions and keys it revoked (or kept), in the user's language ([D120]) */
    const mail = (userId: UserId, kind: "password-reset" | "password-changed" | "signed-out-everywhere", counts: { sessions: number; keys: number }) =>
      Effect.gen(function* () {
        const origin = yield* FiberRef.get(requestOrigin)
        yield* notifications.security({ userId, kind, view: { ...counts, at: yield* clock.now, ip: origin.ip } })
      })

    /** after a password reset: nothing issued before it works, VPN access aside (the caller revokes it) */
    const afterReset = (userId: UserId) =>
      Effect.gen(function* () {
        const sessions = yield* tokens.revokeAll(userId)
        const keys = yield* apiKeys.revokeAll(userId)
        yield* mail(userId, "password-reset", { sessions, keys })
      })

    /** after a password change: the caller's own session stays */
    const afterPasswordChange = (caller: Principal) =>
      Effect.gen(function* () {
        const sessions = yield* tokens.revokeAll(caller.userId, { except: caller.tokenId })
        const keys = yield* apiKeys.revokeAll(caller.userId)
        yield* mail(caller.userId, "password-changed", { sessions, keys })
      })

    /** `POST /v1/auth/logout-all`: every session, the caller's included; the keys stay */
    const signOutEverywhere = (caller: Principal) =>
      Effect.gen(function* () {
        const sessions = yield* tokens.revokeAll(caller.userId)
        const keys = (yield* apiKeys.list(caller)).length
        yield* mail(caller.userId, "signed-out-everywhere", { sessions, keys })
      })

    return { afterReset, afterPasswordChange, signOutEverywhere } as const
  }),
  dependencies: [Tokens.Default, ApiKeys.Default, Notifications.Default]
}) {}
