import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Runtime } from "effect"
import { makeProbe } from "../../src/system/Probe.ts"

// [D10] status checks the database; issue 8: without a forked timeout per request.
describe("status probe", () => {
  const runtime = Runtime.defaultRuntime

  test("a check that never answers is 'down' after the timeout, and is interrupted", async () => {
    let interrupted = false
    const hung = Effect.never.pipe(
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          interrupted = true
        })
      )
    )
    const probe = makeProbe(runtime, hung, 50)
    const started = performance.now()
    expect(await probe()).toBe(false)
    expect(performance.now() - started).toBeGreaterThanOrEqual(45)
    await Bun.sleep(10)
    expect(interrupted).toBe(true)
  })

  test("a failing check is 'down', a succeeding one 'up'", async () => {
    expect(await makeProbe(runtime, Effect.fail("lost"), 1000)()).toBe(false)
    expect(await makeProbe(runtime, Effect.die("boom"), 1000)()).toBe(false)
    expect(await makeProbe(runtime, Effect.succeed(1), 1000)()).toBe(true)
  })

  test("requests during one check share it; the next request after its answer runs a new one", async () => {
    let runs = 0
    const gate = Effect.runSync(Deferred.make<void>())
    const check = Effect.sync(() => runs++).pipe(Effect.zipRight(Deferred.await(gate)))
    const probe = makeProbe(runtime, check, 1000)
    const answers = Promise.all([probe(), probe(), probe()])
    await Bun.sleep(5)
    expect(runs).toBe(1)
    Effect.runSync(Deferred.succeed(gate, undefined))
    expect(await answers).toEqual([true, true, true])
    expect(await probe()).toBe(true)
    expect(runs).toBe(2)
  })

  test("a check that ends at once (a client refusing synchronously) does not stick: the next request checks again", async () => {
    let runs = 0
    let up = false
    const check = Effect.suspend(() => {
      runs++
      return up ? Effect.void : Effect.fail("refused")
    })
    const probe = makeProbe(runtime, check, 1000)
    expect(await probe()).toBe(false)
    up = true
    expect(await probe()).toBe(true)
    expect(runs).toBe(2)
  })
})
