import * as Effect from "effect/Effect"

/** how long one stretch of JavaScript may keep the thread before waiting requests get it (issue 27) */
export const SLICE_MS = 2

/**
 * Hands the thread to waiting I/O (a macrotask: `setImmediate` runs after the poll phase), unlike
 * `Effect.yieldNow`, whose fiber scheduler may resume on a microtask before any socket is read.
 */
export const yieldToIo: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/**
 * `items.map(f)` for CPU-heavy `f` (rendering and encrypting a jobs batch's mails): whenever a
 * stretch has run `budgetMs`, the thread goes to waiting requests before the next item, so that a
 * batch of 500 never blocks the API for its whole length (issue 27).
 */
export const mapSliced = <A, B>(items: ReadonlyArray<A>, f: (a: A) => B, budgetMs: number = SLICE_MS): Effect.Effect<Array<B>> =>
  Effect.gen(function* () {
    const out: Array<B> = []
    let since = performance.now()
    for (const item of items) {
      out.push(f(item))
      if (performance.now() - since >= budgetMs) {
        yield* yieldToIo
        since = performance.now()
      }
    }
    return out
  })

/**
 * Waits `ms` on the real clock (a timer, not `Effect.sleep`: the pause of a jobs batch, issue 27,
 * is wall time whatever clock a test runs under); nothing for 0.
 */
export const pauseFor = (ms: number): Effect.Effect<void> =>
  ms <= 0
    ? Effect.void
    : Effect.async<void>((resume) => {
        const handle = setTimeout(() => resume(Effect.void), ms)
        return Effect.sync(() => clearTimeout(handle))
      })
