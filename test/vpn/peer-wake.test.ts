import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { singleFlight } from "../../src/vpn/PeerWake.ts"

// [D126], issue 41: in a failover a read of the newest revision can stay unanswered (seen on a
// Patroni cluster after a `kill -9` of the primary's postmaster). Every later wake of the push
// streams waited behind it, so pushes stopped on that instance for good; the read is now given
// up after a bound and the next wake reads again.

const until = async (ok: () => boolean, ms: number) => {
  const start = performance.now()
  while (!ok()) {
    if (performance.now() - start > ms) return false
    await Bun.sleep(5)
  }
  return true
}

describe("peer wake: one read at a time, never stuck [D126]", () => {
  test("a read that never answers is given up: the next wake reads again", async () => {
    let reads = 0
    const check = Effect.suspend(() => {
      reads++
      return reads === 1 ? Effect.never : Effect.void
    })
    const wake = await Effect.runPromise(singleFlight(check, 100))
    Effect.runFork(wake) // hangs
    await Bun.sleep(20)
    const second = Effect.runFork(wake)
    expect(await until(() => reads === 2, 2000)).toBe(true)
    await Effect.runPromise(second.await)
    // and the wakes after it go on reading
    await Effect.runPromise(wake)
    expect(reads).toBe(3)
  })

  test("a burst of wakes during a read reads once more, not once each", async () => {
    let reads = 0
    const check = Effect.suspend(() => {
      reads++
      return Effect.sleep("50 millis")
    })
    const wake = await Effect.runPromise(singleFlight(check, 1000))
    const first = Effect.runPromise(wake)
    await Bun.sleep(10) // the first read is under way
    await Promise.all([first, ...Array.from({ length: 10 }, () => Effect.runPromise(wake))])
    expect(reads).toBe(2)
  })
})
