import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { randomInt } from "node:crypto"
import type * as OtpAuth from "otpauth"
import { AuditLog } from "../audit/AuditLog.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey, constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { orNotFound } from "../platform/Errors.ts"
import type { Principal, TwoFactorState, UserRecord } from "./Domain.ts"
import { otpRequired, passwordIncorrect, twoFactorAlreadyEnabled, twoFactorCodeInvalid, twoFactorNotEnabled } from "./Errors.ts"
import { Passwords } from "./Passwords.ts"
import { Users } from "./Users.ts"
import type { UserId } from "../platform/Ids.ts"

/** RFC 6238 as authenticator apps read it: SHA-1, 6 digits, 30-second steps ([D97]). */
export const TOTP_PARAMETERS = { algorithm: "SHA1", digits: 6, period: 30 } as const
/** a code of the step before or after the current one still counts (clock drift, typing time) */
const WINDOW = 1
const RECOVERY_CODES = 10
const RECOVERY_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"

/**
 * otpauth (about 6 MB resident) is loaded at the first second-factor set-up or check a process
 * makes, not at start-up (issue 27; docs/decisions.md, "Idle memory"); synchronously, as the
 * checks below are plain functions.
 */
let otpauthModule: typeof OtpAuth | undefined
const otpauth = (): typeof OtpAuth => (otpauthModule ??= require("otpauth"))

/**
 * The time step `code` belongs to, when it is a code of `secret` (base32) within one step of
 * `now`; the library compares in constant time.
 */
export const matchingStep = (secret: string, code: string, now: Date): Option.Option<number> => {
  const token = code.replace(/\s+/g, "")
  if (!/^[0-9]{6}$/.test(token)) return Option.none()
  const timestamp = now.getTime()
  const { Secret, TOTP } = otpauth()
  const delta = TOTP.validate({ ...TOTP_PARAMETERS, token, secret: Secret.fromBase32(secret), timestamp, window: WINDOW })
  return delta === null ? Option.none() : Option.some(TOTP.counter({ period: TOTP_PARAMETERS.period, timestamp }) + delta)
}

/** `xxxxx-xxxxx`, lower-case letters and digits: about 51 bits each */
const recoveryCode = (): string => {
  let out = ""
  for (let i = 0; i < 10; i++) out += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]
  return `${out.slice(0, 5)}-${out.slice(5)}`
}

/** how a recovery code is stored and looked up: case, spaces and dashes do not matter */
const recoveryHash = (code: string): string => sha256Hex(code.toLowerCase().replace(/[\s-]+/g, ""))

/**
 * The stored hash `code` matches, if any. Every hash is compared, in constant time, whatever
 * matched before; the codes are random enough that an unsalted SHA-256 is fine.
 */
const matchingRecovery = (state: TwoFactorState, code: string): Option.Option<string> => {
  const given = recoveryHash(code)
  let found: string | undefined
  for (const hash of state.recovery.split(" ")) {
    if (hash.length > 0 && constantTimeEqual(hash, given)) found = hash
  }
  return Option.fromNullable(found)
}

/**
 * Two-factor sign-in of [D97]: setting up a secret, turning it on with a first code (which
 * hands out the recovery codes), turning it off with the password and a code, and the second
 * factor of a sign-in. Secrets are sealed with the application key; codes are never logged.
 */
export class TwoFactor extends Effect.Service<TwoFactor>()("accounts/TwoFactor", {
  effect: Effect.gen(function* () {
    const clock = yield* AppClock
    const config = yield* AppConfig
    const appKey = yield* AppKey
    const users = yield* Users
    const passwords = yield* Passwords
    const audit = yield* AuditLog
    /** two-factor sign-in turned on or off: a security event of the user's ([D99]) */
    const event = (action: "two_factor_enabled" | "two_factor_disabled", caller: Principal) =>
      audit.record({ action, actorId: caller.userId, actorKind: caller.kind, resource: `user:${caller.userId}`, subjectId: caller.userId })
    const issuer = new URL(config.publicUrl).hostname

    const stateOf = (userId: UserId) => Effect.flatMap(users.twoFactor(userId), orNotFound)

    /** a current code of the secret in use, or one of the recovery codes (kept: turning off clears them all) */
    const codeMatches = (state: TwoFactorState, secret: string, code: string, now: Date) =>
      Option.isSome(matchingStep(appKey.decrypt(secret), code, now)) || Option.isSome(matchingRecovery(state, code))

    /** a new secret waiting for its first code; a second call replaces it */
    const setUp = (caller: Principal) =>
      Effect.gen(function* () {
        const user = yield* Effect.flatMap(users.findById(caller.userId), orNotFound)
        if (user.two_factor) return yield* Effect.fail(twoFactorAlreadyEnabled())
        const { Secret, TOTP } = otpauth()
        const secret = new Secret({ size: 20 })
        const stored = yield* users.setTwoFactorPending(user.id, appKey.encrypt(secret.base32), yield* clock.now)
        if (!stored) return yield* Effect.fail(twoFactorAlreadyEnabled())
        const totp = new TOTP({ ...TOTP_PARAMETERS, issuer, label: user.email, secret })
        return { secret: secret.base32, otpauth_url: totp.toString() }
      })

    /** a code of the pending secret turns it on; the recovery codes are shown this once */
    const confirm = (caller: Principal, code: string) =>
      Effect.gen(function* () {
        const state = yield* stateOf(caller.userId)
        if (state.secret !== null) return yield* Effect.fail(twoFactorAlreadyEnabled())
        const now = yield* clock.now
        const step = state.pending === null ? Option.none() : matchingStep(appKey.decrypt(state.pending), code, now)
        if (state.pending === null || Option.isNone(step)) return yield* Effect.fail(twoFactorCodeInvalid("code"))
        const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode)
        // the confirming code is spent: login takes only a code of a later step ([D115])
        const enabled = yield* users.enableTwoFactor(caller.userId, state.pending, codes.map(recoveryHash), step.value, now)
        // another set-up replaced the secret meanwhile: this code is not one of the new secret's
        if (!enabled) return yield* Effect.fail(twoFactorCodeInvalid("code"))
        yield* event("two_factor_enabled", caller)
        return { recovery_codes: codes }
      })

    /** the password (checked first) and a code or recovery code turn it off */
    const disable = (caller: Principal, password: string, code: string) =>
      Effect.gen(function* () {
        const user = yield* Effect.flatMap(users.findById(caller.userId), orNotFound)
        if (!(yield* passwords.verify(password, user.password_hash))) return yield* Effect.fail(passwordIncorrect("password"))
        const state = yield* stateOf(user.id)
        if (state.secret === null) return yield* Effect.fail(twoFactorNotEnabled())
        const now = yield* clock.now
        if (!codeMatches(state, state.secret, code, now)) return yield* Effect.fail(twoFactorCodeInvalid("code"))
        yield* users.disableTwoFactor(user.id, now)
        yield* event("two_factor_disabled", caller)
      })

    /**
     * The second factor of a sign-in whose password was right: nothing when it is off; else a
     * current code of a later step than the last accepted one (never the same code twice), or
     * an unused recovery code, which is spent. Failures are 422 under `otp`. Says which factor
     * was used (and, for a recovery code, how many are left: the sign-in mail tells it).
     */
    const signIn = (user: UserRecord, given: { readonly otp?: string | undefined; readonly recovery_code?: string | undefined }) =>
      Effect.gen(function* () {
        if (!user.two_factor) return { factor: "none" } as const
        const otp = given.otp?.trim() ?? ""
        const recovery = given.recovery_code?.trim() ?? ""
        if (otp === "" && recovery === "") return yield* Effect.fail(otpRequired())
        const state = yield* stateOf(user.id)
        if (state.secret === null) return yield* Effect.fail(twoFactorCodeInvalid("otp"))
        if (otp !== "") {
          const step = matchingStep(appKey.decrypt(state.secret), otp, yield* clock.now)
          if (Option.isNone(step) || !(yield* users.acceptTwoFactorStep(user.id, step.value))) {
            return yield* Effect.fail(twoFactorCodeInvalid("otp"))
          }
          return { factor: "otp" } as const
        }
        const hash = matchingRecovery(state, recovery)
        if (Option.isNone(hash) || !(yield* users.useRecoveryCode(user.id, hash.value))) {
          return yield* Effect.fail(twoFactorCodeInvalid("otp"))
        }
        const left = state.recovery.split(" ").filter((h) => h.length > 0).length - 1
        return { factor: "recovery_code", left: Math.max(0, left) } as const
      })

    return { setUp, confirm, disable, signIn } as const
  }),
  dependencies: [Users.Default, Passwords.Default, AuditLog.Default]
}) {}
