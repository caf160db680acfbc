import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SQL } from "bun"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Runtime from "effect/Runtime"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { AppConfig } from "../platform/Config.ts"
import { PlanListResponse } from "./Api.ts"
import { onCatalogChanged } from "./CatalogChanges.ts"
import type { PlanRow } from "./Catalog.ts"
import { CatalogRepo } from "./CatalogRepo.ts"

/**
 * The public catalogue in memory (issue 8): `GET /v1/plans` is answered from the exact bytes of
 * its envelope, encoded once per catalogue version. The catalogue changes rarely; every change
 * must still show at once on this instance and within a second on the others:
 *
 * 1. a write in this process (admin API, seed-demo) calls `catalogChanged` (CatalogChanges.ts)
 *    after its commit;
 * 2. on PostgreSQL, triggers on `plans` and `billing_cycles` (migration 2) `pg_notify` the
 *    channel `catalog_changed` for every writer (API, CLI, psql), and each instance LISTENs on a
 *    dedicated connection of its own (`application_name` `vpn-api-listen`);
 * 3. while that connection is not subscribed (before the first LISTEN, from a lost connection
 *    until Bun has re-subscribed) notifications may be missed, so the cache does not answer:
 *    every request reads the database as before.
 *
 * On the embedded database (one process, one connection) there is no other writer: (1) is
 * complete and the cache always answers.
 */

/** the channel the triggers of migration 2 notify */
export const CATALOG_CHANNEL = "catalog_changed"
/** the `application_name` of the LISTEN connection (operators and tests find it by this) */
export const LISTEN_APPLICATION_NAME = "vpn-api-listen"

/** The spec's Plan from its row. */
export const publicPlan = (r: PlanRow) => ({
  id: r.id,
  name: r.name,
  description: r.description,
  bandwidth_limit_gb: r.bandwidth_limit_gb,
  speed_limit_mbps: r.speed_limit_mbps,
  trial_days: r.trial_days
})

const encodePlanList = Schema.encode(PlanListResponse)
const utf8 = new TextEncoder()

export class CatalogCache extends Context.Tag("CatalogCache")<CatalogCache, {
  /** the response of `GET /v1/plans`: status 200, `application/json`, `{success: true, data}` */
  readonly planList: Effect.Effect<HttpServerResponse.HttpServerResponse>
}>() {
  static readonly Live = Layer.scoped(
    CatalogCache,
    Effect.gen(function*() {
      const repo = yield* CatalogRepo
      const config = yield* AppConfig
      const scope = yield* Effect.scope
      const runtime = yield* Effect.runtime<never>()

      // the same bytes and headers the framework makes of the handler's data
      const load = repo.activePlans.pipe(
        Effect.flatMap((rows) => encodePlanList(rows.map(publicPlan))),
        Effect.map((body) =>
          HttpServerResponse.uint8Array(utf8.encode(JSON.stringify(body)), { contentType: "application/json" })
        ),
        Effect.orDie
      )

      // All state changes happen synchronously on the event loop. `generation` grows with every
      // invalidation and every change of `serving`: a load stores its result only if no change
      // happened since it started, so a read from before a change is never kept after it.
      let generation = 0
      let serving = Option.isNone(config.databaseUrl)
      let cached: HttpServerResponse.HttpServerResponse | undefined
      let loading: { readonly generation: number; readonly done: Deferred.Deferred<HttpServerResponse.HttpServerResponse> } | undefined

      const invalidate = () => {
        generation++
        cached = undefined
        loading = undefined
      }
      yield* onCatalogChanged(invalidate)

      /** one load for the misses of one generation, in the layer's scope (a client leaving does not stop it) */
      const fill = Effect.suspend(() => {
        if (loading !== undefined && loading.generation === generation) return Deferred.await(loading.done)
        const started = generation
        const done = Deferred.unsafeMake<HttpServerResponse.HttpServerResponse>(FiberId.none)
        loading = { generation: started, done }
        return load.pipe(
          Effect.tap((response) => Effect.sync(() => {
            if (started === generation && serving) cached = response
          })),
          Effect.onExit((exit) => {
            if (loading?.done === done) loading = undefined
            return Deferred.done(done, exit)
          }),
          Effect.forkIn(scope),
          Effect.zipRight(Deferred.await(done))
        )
      })

      const planList = Effect.suspend(() => {
        if (!serving) return load
        return cached !== undefined ? Effect.succeed(cached) : fill
      })

      if (Option.isSome(config.databaseUrl)) {
        yield* listen(Redacted.value(config.databaseUrl.value), {
          notified: invalidate,
          subscribed: () => {
            invalidate()
            serving = true
          },
          lost: (closing) => {
            invalidate()
            if (!serving) return
            serving = false
            if (closing) return
            Runtime.runFork(runtime)(
              Effect.logWarning("catalogue cache: LISTEN connection lost; reading the database until it is back")
            )
          }
        })
      }

      return { planList }
    })
  )
}

/**
 * LISTEN on a dedicated connection (Bun's `SQL.listen`: it reconnects with backoff and calls
 * `subscribed` again after each re-subscription). The first subscription is retried here (Bun
 * rejects it when the database cannot be reached) without holding up the start; the connection
 * is closed with the layer's scope.
 */
const listen = (
  url: string,
  on: { notified: () => void; subscribed: () => void; lost: (closing: boolean) => void }
) =>
  Effect.gen(function*() {
    let closing = false
    const client = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new SQL(url, {
          max: 1,
          connection: { application_name: LISTEN_APPLICATION_NAME },
          onclose: () => on.lost(closing)
        })
      ),
      (client) =>
        Effect.suspend(() => {
          closing = true
          return Effect.promise(() => client.close({ timeout: 1 }).catch(() => {}))
        }).pipe(Effect.timeout("2 seconds"), Effect.ignore)
    )
    const subscribe = Effect.tryPromise(() => client.listen(CATALOG_CHANNEL, () => on.notified(), () => on.subscribed())).pipe(
      Effect.tapError(() => Effect.logWarning("catalogue cache: LISTEN failed; retrying, reading the database meanwhile")),
      Effect.retry(Schedule.exponential("100 millis").pipe(Schedule.union(Schedule.spaced("5 seconds"))))
    )
    yield* Effect.forkScoped(subscribe)
  })
