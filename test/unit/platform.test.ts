import { describe, expect } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AppClock } from "../../src/platform/Clock.ts"
import { AppKey } from "../../src/platform/Crypto.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { Mailer } from "../../src/platform/Mailer.ts"
import { RateLimiter } from "../../src/platform/RateLimiter.ts"
import { it } from "../support/effect.ts"

// Issue 35, the unit tier: the edges the design names (clock, rate limiting, application key,
// key generation, mailer) through their `Test` layers, as the rule tests use them.

describe("RateLimiter.Test [D30]: fixed 60-second windows on the test's clock", () => {
  const clock = AppClock.Test()
  const test = it.layer(RateLimiter.Test.pipe(Layer.provideMerge(clock.layer)))

  test.effect("the limit lets `limit` hits through, the next is refused with the seconds left; a new window starts after 60 s", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      const hits = yield* Effect.forEach([1, 2, 3], () => limiter.hit("login:1.2.3.4", 2))
      expect(hits.map((h) => [h.allowed, h.remaining])).toEqual([
        [true, 1],
        [true, 0],
        [false, 0]
      ])
      expect(hits[2]!.retryAfter).toBe(60)
      clock.controls.advance(45_000)
      expect(yield* limiter.hit("login:1.2.3.4", 2)).toMatchObject({ allowed: false, retryAfter: 15 })
      // another key has its own window
      expect((yield* limiter.hit("login:5.6.7.8", 2)).allowed).toBe(true)
      clock.controls.advance(15_000)
      expect(yield* limiter.hit("login:1.2.3.4", 2)).toMatchObject({ allowed: true, remaining: 1 })
    })
  )

  test.effect("hitAll counts one request against every key; the tightest decides", () =>
    Effect.gen(function* () {
      const limiter = yield* RateLimiter
      yield* limiter.hit("user:1", 3)
      const both = yield* limiter.hitAll(["ip:9.9.9.9", "user:1"], 3)
      expect(both.map((h) => h.remaining)).toEqual([2, 1])
    })
  )
})

describe("AppKey.Test [D1]: AES-256-GCM with a fixed key", () => {
  const test = it.layer(AppKey.Test)

  test.effect("sealed values open again; each seal has its own nonce; a changed byte does not open", () =>
    Effect.gen(function* () {
      const key = yield* AppKey
      const a = key.encrypt("wg-private-key")
      const b = key.encrypt("wg-private-key")
      expect(a).not.toBe(b)
      expect([key.decrypt(a), key.decrypt(b)]).toEqual(["wg-private-key", "wg-private-key"])
      const raw = Buffer.from(a.slice(3), "base64")
      raw[raw.length - 1] = raw[raw.length - 1]! ^ 1
      expect(() => key.decrypt(`v1:${raw.toString("base64")}`)).toThrow()
      expect(key.sign("invoice.1")).toBe(key.sign("invoice.1"))
      expect(key.sign("invoice.1")).not.toBe(key.sign("invoice.2"))
    })
  )
})

describe("KeyGen.Test: deterministic WireGuard pairs", () => {
  it.effect("the same sequence in every build; each public key is its private key's", () =>
    Effect.gen(function* () {
      const pairs = (n: number) =>
        Effect.provide(
          Effect.flatMap(KeyGen, (k) => Effect.replicateEffect(k.x25519, n)),
          KeyGen.Test
        )
      const first = yield* pairs(3)
      expect(yield* pairs(3)).toEqual(first)
      expect(new Set(first.map((p) => p.publicKey)).size).toBe(3)
      for (const pair of first) expect(KeyGen.publicKeyOf(pair.privateKey)).toBe(pair.publicKey)
    })
  )
})

describe("Mailer.Test [D96]: mails captured; an SMTP outage on demand", () => {
  it.effect("sent mails are in the outbox in order; while down, a send fails MailNotSent and nothing is captured", () =>
    Effect.gen(function* () {
      const mailer = Mailer.Test()
      const send = (to: string) =>
        Effect.provide(
          Effect.flatMap(Mailer, (m) => m.send({ to, subject: "Hi", text: "Hello" })),
          mailer.layer
        )
      yield* send("a@example.test")
      mailer.controls.down = true
      const failed = yield* Effect.flip(send("b@example.test"))
      expect(failed._tag).toBe("MailNotSent")
      mailer.controls.down = false
      yield* send("c@example.test")
      expect(mailer.outbox.map((m) => m.to)).toEqual(["a@example.test", "c@example.test"])
    })
  )
})
