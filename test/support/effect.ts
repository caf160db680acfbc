import { test } from "bun:test"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"

/**
 * `@effect/vitest`'s `it.effect`, on bun:test (issue 35): a test is an Effect program, run to its
 * end; a failure or a defect fails the test with the cause printed whole. `it.layer(layer)` gives
 * each test of the block its own build of `layer` (Test layers keep their rows in memory, so no
 * test sees another's).
 */
const run = async (program: Effect.Effect<unknown, unknown>) => {
  const exit = await Effect.runPromiseExit(Effect.scoped(program))
  if (Exit.isFailure(exit)) throw new Error(Cause.pretty(exit.cause))
}

type Body<R> = () => Effect.Effect<unknown, unknown, R>

export const it = {
  effect: (name: string, body: Body<never>, timeout?: number) => test(name, () => run(Effect.suspend(body)), timeout),
  layer: <ROut, E>(layer: Layer.Layer<ROut, E>) => ({
    effect: (name: string, body: Body<ROut>, timeout?: number) => test(name, () => run(Effect.provide(Effect.suspend(body), layer)), timeout)
  })
}
