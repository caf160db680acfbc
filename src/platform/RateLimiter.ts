import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ServiceUnavailable, TooManyAttempts } from "./Errors.ts"
import { AppClock } from "./Clock.ts"

export interface Hit {
  readonly limit: number
  readonly remaining: number
  /** seconds until the window ends */
  readonly retryAfter: number
  readonly allowed: boolean
}

const WINDOW_MS = 60_000
const PURGE_BATCH = 5_000

const Counter = Schema.Struct({ key: Schema.String, window_started_at: Schema.DateFromSelf, hits: Schema.Number })

const toHit = (limit: number, hits: number, windowStart: Date, now: Date): Hit => ({
  limit,
  remaining: Math.max(0, limit - hits),
  retryAfter: Math.max(1, Math.ceil((windowStart.getTime() + WINDOW_MS - now.getTime()) / 1000)),
  allowed: hits <= limit
})

/**
 * Fixed 60-second windows that start at their first request ([D30]). Counters live in
 * PostgreSQL so every instance shares them exactly; one statement counts atomically.
 */
export class RateLimiter extends Context.Tag("RateLimiter")<
  RateLimiter,
  {
    readonly hit: (key: string, limit: number) => Effect.Effect<Hit, ServiceUnavailable>
    /**
     * Counts one request against every key at once, in one statement with the keys in a fixed
     * order: concurrent requests then reach every counter in the same order, so the limit lets
     * exactly `limit` of a burst through (separate statements could give one request the 3rd
     * hit of one key and the 7th of the other, refusing requests the limit allows).
     */
    readonly hitAll: (keys: ReadonlyArray<string>, limit: number) => Effect.Effect<ReadonlyArray<Hit>, ServiceUnavailable>
  }
>() {
  static readonly Live = Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock
      const count = SqlSchema.findAll({
        Request: Schema.Struct({ keys: Schema.Array(Schema.String), now: Schema.DateFromSelf, floor: Schema.DateFromSelf }),
        Result: Counter,
        execute: ({ floor, keys, now }) =>
          sql`
            insert into rate_limits ${sql.insert(keys.map((key) => ({ key, window_started_at: now, hits: 1 })))}
            on conflict (key) do update set
              window_started_at = case when rate_limits.window_started_at <= ${floor}
                then excluded.window_started_at else rate_limits.window_started_at end,
              hits = case when rate_limits.window_started_at <= ${floor}
                then 1 else rate_limits.hits + 1 end
            returning key, window_started_at, hits`
      })
      const hitAll = (keys: ReadonlyArray<string>, limit: number) =>
        Effect.gen(function* () {
          const now = yield* clock.now
          const rows = yield* count({ keys: [...new Set(keys)].sort(), now, floor: new Date(now.getTime() - WINDOW_MS) })
          const byKey = new Map(rows.map((row) => [row.key, row]))
          return keys.map((key) => {
            const row = byKey.get(key)!
            return toHit(limit, row.hits, row.window_started_at, now)
          })
        }).pipe(
          // fail closed: without the shared counter nobody passes [D30]
          Effect.catchTags({
            SqlError: () => Effect.fail(new ServiceUnavailable()),
            ParseError: (error) => Effect.die(error)
          })
        )
      return {
        hit: (key, limit) => Effect.map(hitAll([key], limit), (hits) => hits[0]!),
        hitAll
      }
    })
  )

  /**
   * Deletes the counters whose window has ended ([D30], [D80] rev. 2), in batches of short
   * statements, so the table holds only the last minute's keys. The jobs run it; the count of
   * rows deleted is returned.
   */
  static readonly purgeExpired: Effect.Effect<number, never, SqlClient.SqlClient | AppClock> = Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Effect.flatMap(AppClock, (clock) => clock.now)
    const floor = new Date(now.getTime() - WINDOW_MS)
    const batch = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({ key: Schema.String }),
      execute: (floor) =>
        sql`
          delete from rate_limits where key in (
            select key from rate_limits where window_started_at <= ${floor} limit ${PURGE_BATCH}
          )
          returning key`
    })
    let total = 0
    for (;;) {
      const deleted = (yield* batch(floor)).length
      total += deleted
      if (deleted < PURGE_BATCH) return total
    }
  }).pipe(Effect.orDie)

  /** The same windows in this process's memory (tests of callers; the coarse general limit). */
  static readonly memory = Effect.map(AppClock, (clock): RateLimiter["Type"] => {
    const windows = new Map<string, { start: Date; hits: number }>()
    const hit = (key: string, limit: number) =>
      Effect.map(clock.now, (now) => {
        let w = windows.get(key)
        if (!w || w.start.getTime() <= now.getTime() - WINDOW_MS) {
          w = { start: now, hits: 0 }
          windows.set(key, w)
        }
        w.hits++
        if (windows.size > 100_000) {
          for (const [k, v] of windows) if (v.start.getTime() <= now.getTime() - WINDOW_MS) windows.delete(k)
        }
        return toHit(limit, w.hits, w.start, now)
      })
    return { hit, hitAll: (keys: ReadonlyArray<string>, limit: number) => Effect.forEach(keys, (key) => hit(key, limit)) }
  })

  static readonly Memory = Layer.effect(RateLimiter, RateLimiter.memory)

  /** issue 35: the windows in memory on the test's clock (`AppClock.Test` moves them) */
  static readonly Test: Layer.Layer<RateLimiter, never, AppClock> = RateLimiter.Memory
}

/**
 * Counts one request against each `key` (the tightest wins), sends `X-RateLimit-Limit` and
 * `X-RateLimit-Remaining`, and fails with 429 and `Retry-After` past the limit.
 */
export const enforceRateLimit = (limit: number, keys: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    const hits = yield* limiter.hitAll(keys, limit)
    const tightest = hits.reduce((a, b) => (b.remaining < a.remaining || (!b.allowed && a.allowed) ? b : a))
    const blocked = hits.filter((h) => !h.allowed)
    const retryAfter = blocked.length > 0 ? Math.max(...blocked.map((h) => h.retryAfter)) : undefined
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(
        HttpServerResponse.setHeaders(response, {
          "x-ratelimit-limit": String(limit),
          "x-ratelimit-remaining": String(tightest.remaining),
          ...(retryAfter !== undefined ? { "retry-after": String(retryAfter) } : {})
        })
      )
    )
    if (retryAfter !== undefined) return yield* Effect.fail(new TooManyAttempts())
  })
