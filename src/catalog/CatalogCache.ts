import * as SqlClient from "@effect/sql/SqlClient"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { AppConfig, directDatabaseUrl } from "../platform/Config.ts"
import { listenChannel } from "../platform/Listen.ts"
import { onCatalogChanged } from "./CatalogChanges.ts"
import { CatalogRepo } from "./CatalogRepo.ts"
import { PlanListResponse } from "./Api.ts"
import type { Cycle, Plan } from "./Domain.ts"

/**
 * The catalogue in memory: plans and cycles by id (the services and invoices reads take their
 * plan and cycle from here), and the exact bytes of `GET /v1/plans`, encoded once per version.
 * The catalogue changes rarely; every change must still show at once on this instance and
 * within a second on the others:
 *
 * 1. a write in this process (admin API, seed-demo) calls `catalogChanged` (CatalogChanges.ts)
 *    after its commit;
 * 2. on PostgreSQL, triggers on `plans` and `billing_cycles` (migration 2) `pg_notify` the
 *    channel `catalog_changed` for every writer (API, CLI, psql), and each instance LISTENs on a
 *    dedicated connection of its own (`application_name` `vpn-api-listen`);
 * 3. while that connection is not subscribed (before the first LISTEN, from a lost connection
 *    until Bun has re-subscribed) notifications may be missed, so the cache does not answer:
 *    every read loads the catalogue from the database.
 *
 * On the embedded database (one process, one connection) there is no other writer: (1) is
 * complete and the cache always answers.
 */

/** the channel the triggers of migration 2 notify */
export const CATALOG_CHANNEL = "catalog_changed"
/** the `application_name` of the LISTEN connection (operators and tests find it by this) */
export const LISTEN_APPLICATION_NAME = "vpn-api-listen"

/** One version of the catalogue. */
export interface Snapshot {
  readonly plans: ReadonlyMap<number, Plan>
  readonly cycles: ReadonlyMap<number, Cycle>
  /** cycles of each plan, shortest first */
  readonly cyclesOf: ReadonlyMap<number, ReadonlyArray<Cycle>>
  readonly activePlans: ReadonlyArray<Plan>
  /** the body of `GET /v1/plans` (`{success: true, data}`), as the framework would encode it */
  readonly planListJson: Uint8Array
}

const encodePlanList = Schema.encode(PlanListResponse)
const utf8 = new TextEncoder()

const snapshotOf = (rows: { readonly plans: ReadonlyArray<Plan>; readonly cycles: ReadonlyArray<Cycle> }) =>
  Effect.map(Effect.orDie(encodePlanList(rows.plans.filter((p) => p.is_active))), (body): Snapshot => {
    const cyclesOf = new Map<number, Array<Cycle>>()
    for (const c of rows.cycles) cyclesOf.set(c.plan_id, [...(cyclesOf.get(c.plan_id) ?? []), c])
    return {
      plans: new Map(rows.plans.map((p) => [p.id, p])),
      cycles: new Map(rows.cycles.map((c) => [c.id, c])),
      cyclesOf,
      activePlans: rows.plans.filter((p) => p.is_active),
      planListJson: utf8.encode(JSON.stringify(body))
    }
  })

export class CatalogCache extends Effect.Service<CatalogCache>()("catalog/CatalogCache", {
  scoped: Effect.gen(function* () {
    const repo = yield* CatalogRepo
    const config = yield* AppConfig
    const scope = yield* Effect.scope
    const runtime = yield* Effect.runtime<never>()

    const load = Effect.flatMap(repo.everything, snapshotOf)

    // All state changes happen synchronously on the event loop. `generation` grows with every
    // invalidation and every change of `serving`: a load stores its result only if no change
    // happened since it started, so a read from before a change is never kept after it.
    let generation = 0
    let serving = Option.isNone(config.databaseUrl)
    let cached: Snapshot | undefined
    let loading: { readonly generation: number; readonly done: Deferred.Deferred<Snapshot> } | undefined

    const invalidate = () => {
      generation++
      cached = undefined
      loading = undefined
    }
    yield* onCatalogChanged(invalidate)

    /** one load for the misses of one generation, in the layer's scope (a client leaving does not stop it) */
    const shared = Effect.suspend(() => {
      if (loading !== undefined && loading.generation === generation) return Deferred.await(loading.done)
      const started = generation
      const done = Deferred.unsafeMake<Snapshot>(FiberId.none)
      loading = { generation: started, done }
      return load.pipe(
        Effect.tap((snapshot) =>
          Effect.sync(() => {
            if (started === generation && serving) cached = snapshot
          })
        ),
        Effect.onExit((exit) => {
          if (loading?.done === done) loading = undefined
          return Deferred.done(done, exit)
        }),
        Effect.forkIn(scope),
        Effect.zipRight(Deferred.await(done))
      )
    })

    /**
     * Issue 34: a read inside a transaction never waits for a load another fiber started: that
     * load may be waiting for the connection the transaction holds (the embedded database has
     * one), and neither would ever go on (a plan edit, then a device created while a node stream
     * reloaded the catalogue, hung the server). It reads the catalogue itself, on its own
     * connection, and keeps nothing (it may see its own uncommitted writes).
     */
    const fill = Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (tx) => (Option.isSome(tx) ? load : shared))

    /** the catalogue now: from memory while the cache serves, else read from the database */
    const snapshot: Effect.Effect<Snapshot> = Effect.suspend(() => {
      if (!serving) return load
      return cached !== undefined ? Effect.succeed(cached) : fill
    })

    /**
     * The snapshot, read again once when it lacks what `has` asks for: rows written behind the
     * API's back (a test's or an operator's insert on the embedded database) are found too.
     */
    const snapshotWith = (has: (snapshot: Snapshot) => boolean) =>
      Effect.flatMap(snapshot, (first) => {
        if (has(first) || !serving || cached !== first) return Effect.succeed(first)
        invalidate()
        return snapshot
      })

    const listenUrl = directDatabaseUrl(config)
    if (Option.isSome(listenUrl)) {
      yield* listenChannel(listenUrl.value, CATALOG_CHANNEL, LISTEN_APPLICATION_NAME, {
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
          Runtime.runFork(runtime)(Effect.logWarning("catalogue cache: LISTEN connection lost; reading the database until it is back"))
        }
      })
    }

    return { snapshot, snapshotWith, planListJson: Effect.map(snapshot, (s) => s.planListJson) } as const
  }),
  dependencies: [CatalogRepo.Default]
}) {
  /** issue 35: no cache and no LISTEN: every read is the repository's rows as they are now */
  static readonly Test: Layer.Layer<CatalogCache, never, CatalogRepo> = Layer.effect(
    CatalogCache,
    Effect.map(CatalogRepo, (repo) => {
      const snapshot = Effect.flatMap(repo.everything, snapshotOf)
      return CatalogCache.make({ snapshot, snapshotWith: () => snapshot, planListJson: Effect.map(snapshot, (s) => s.planListJson) })
    })
  )
}
