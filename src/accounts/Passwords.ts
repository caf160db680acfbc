import * as Effect from "effect/Effect"
import { AppConfig } from "../platform/Config.ts"
import { lowerHashingThreads } from "../platform/HashPriority.ts"
import { Metrics } from "../platform/Metrics.ts"

/**
 * OWASP's recommended argon2id setting (19 MiB, 2 passes): Bun's default (64 MiB) costs about
 * 0.4 s of a core per hash on small machines, which is what a login flood would buy.
 * `verify` reads the parameters from each stored hash; `needsRehash` tells a hash made with
 * other ones, which the next successful login replaces ([D20]).
 */
export const ARGON2ID = { algorithm: "argon2id", memoryCost: 19_456, timeCost: 2 } as const

/** `$argon2id$v=19$m=19456,t=2,p=1`: algorithm, version and parameters of an encoded hash. */
const parametersOf = (encoded: string) => encoded.split("$").slice(0, 4).join("$")

/**
 * argon2id password hashes ([D20]) through a bounded pool: at most `hashConcurrency` hashes or
 * verifications run at once, so a burst of logins queues instead of exhausting memory.
 */
export class Passwords extends Effect.Service<Passwords>()("accounts/Passwords", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const metrics = yield* Metrics
    const pool = yield* Effect.makeSemaphore(Math.max(1, config.hashConcurrency))
    // the pool's threads exist once a hash has run: lower their priority then
    const lower = Effect.sync(lowerHashingThreads)
    /** `work` on a thread of the pool; the hashes queued and running are gauges of [D102] */
    const inPool = <A>(work: Effect.Effect<A>) =>
      Effect.suspend(() => {
        let waiting = true
        metrics.hashQueued(1)
        const started = Effect.sync(() => {
          waiting = false
          metrics.hashQueued(-1)
          metrics.hashRunning(1)
        })
        return pool
          .withPermits(1)(Effect.zipRight(started, work))
          .pipe(Effect.ensuring(Effect.sync(() => (waiting ? metrics.hashQueued(-1) : metrics.hashRunning(-1)))), Effect.tap(lower))
      })
    const hash = (password: string) => inPool(Effect.promise(() => Bun.password.hash(password, ARGON2ID)))
    const verify = (password: string, encoded: string) =>
      inPool(Effect.tryPromise(() => Bun.password.verify(password, encoded, "argon2id")).pipe(Effect.orElseSucceed(() => false)))
    // one hash with the current parameters, made once on first use
    const dummy = yield* Effect.cached(hash("not a password of anybody"))
    return {
      hash,
      verify,
      /** The same work as a real verification, for an account that does not exist (no enumeration by timing). */
      verifyNobody: (password: string) => Effect.flatMap(dummy, (encoded) => verify(password, encoded)).pipe(Effect.asVoid),
      /** Whether `encoded` was made with other parameters than the current ones. */
      needsRehash: (encoded: string) => Effect.map(dummy, (current) => parametersOf(encoded) !== parametersOf(current))
    } as const
  })
}) {}
