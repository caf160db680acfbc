import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * Wall-clock time for the product's rules (expiry, windows, due dates). Tests swap in a
 * clock they move by hand, so no test sleeps to see time pass.
 */
export class AppClock extends Context.Tag("AppClock")<
  AppClock,
  {
    readonly now: Effect.Effect<Date>
  }
>() {
  static readonly Live = Layer.succeed(AppClock, { now: Effect.sync(() => new Date()) })

  /** A clock standing at `start` until `advance` or `set` moves it. */
  static readonly Test = (start: Date = new Date("2026-01-15T12:00:00.000Z")) => {
    let current = start.getTime()
    const controls = {
      advance: (ms: number) => {
        current += ms
      },
      set: (date: Date) => {
        current = date.getTime()
      },
      get: () => new Date(current)
    }
    return {
      controls,
      layer: Layer.succeed(AppClock, { now: Effect.sync(() => new Date(current)) })
    }
  }
}
