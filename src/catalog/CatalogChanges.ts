import * as Effect from "effect/Effect"

/** the catalogue caches of this process (one per server; several when tests build several apps) */
const caches = new Set<() => void>()

/**
 * The catalogue changed: every catalogue cache of this process forgets it. Call it
 * after the write's transaction committed (earlier, a request in between could cache the old
 * rows again). It needs no service, so any writer can call it: the CLI and the tests run
 * seed-demo without a cache. Other processes learn of the change from the triggers' NOTIFY.
 */
export const catalogChanged: Effect.Effect<void> = Effect.sync(() => {
  for (const invalidate of caches) invalidate()
})

/** a cache of this process joins (`catalogChanged` calls `invalidate`); the result leaves */
export const onCatalogChanged = (invalidate: () => void) =>
  Effect.acquireRelease(
    Effect.sync(() => caches.add(invalidate)),
    () => Effect.sync(() => caches.delete(invalidate))
  )
