import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Context, Deferred, Effect, Exit, Fiber, FiberId, Layer, Scope } from "effect"
import { CatalogCache } from "../../src/catalog/CatalogCache.ts"
import { catalogChanged } from "../../src/catalog/CatalogChanges.ts"
import type { Plan } from "../../src/catalog/Domain.ts"
import { CatalogRepo } from "../../src/catalog/CatalogRepo.ts"
import { seedDemo } from "../../src/demo/SeedDemo.ts"
import { AppConfig } from "../../src/platform/Config.ts"
import { makeTestApp, type TestApp, testConfig } from "../support/app.ts"
import { catalogAdmin } from "./helpers.ts"
import { PlanId } from "../../src/platform/Ids.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"

// Issue 8: GET /v1/plans from memory, the same answer as before, and every catalogue write of
// this process seen by the very next request (in-process invalidation; across instances:
// test/instances/catalog-cache.test.ts).
let app: TestApp
let admin: Awaited<ReturnType<typeof catalogAdmin>>
/** anyone through the typed client of the contract */
let anyone: TypedClient

beforeAll(async () => {
  app = await makeTestApp()
  admin = await catalogAdmin(app)
  anyone = await typedClient(app)
})
afterAll(() => app.dispose())

/** the active plans through the typed client: the declared 200 answer, decoded */
const listed = () => ok(anyone.catalog.listPlans())

/** what the database holds, as the spec's envelope (field order of the Plan schema) */
const expectedText = async () => {
  const rows = await app.sql<Plan>`
    select id, name, description, bandwidth_limit_gb, speed_limit_mbps, trial_days, device_limit, usage_reset, quota_action, throttle_mbps
    from plans where is_active order by id`
  return JSON.stringify({
    success: true,
    data: rows.map((r) => ({
      id: r.id,
      name: r.name,
      description: r.description,
      bandwidth_limit_gb: r.bandwidth_limit_gb,
      speed_limit_mbps: r.speed_limit_mbps,
      trial_days: r.trial_days,
      device_limit: r.device_limit,
      usage_reset: r.usage_reset,
      quota_action: r.quota_action,
      throttle_mbps: r.throttle_mbps
    }))
  })
}

/** the headers a client sees; the length, the ETag (the bodies differ) and the request id by name only */
const headersOf = (res: { headers: Headers }) =>
  Object.fromEntries(
    [...res.headers.entries()].map(([name, value]) => [name, name === "content-length" || name === "x-request-id" || name === "etag" ? "*" : value])
  )

describe("GET /v1/plans from memory", () => {
  test("the same status, headers and bytes as the framework's own encoding, on a miss and on a hit", async () => {
    const basic = await admin.createPlan({ name: "Basic", description: 'Ünïcode ✓ "quoted"', speed_limit_mbps: 50, trial_days: 7 })
    await admin.createPlan({ name: "Pro", bandwidth_limit_gb: 0, speed_limit_mbps: null })
    await admin.createPlan({ name: "Hidden", is_active: false })
    const expected = await expectedText()
    const miss = await app.get("/v1/plans")
    const hit = await app.get("/v1/plans")
    // a sibling route encoded by the framework (not cached): the headers every JSON answer has
    const framework = await app.get(`/v1/plans/${basic.id}`)
    for (const res of [miss, hit]) {
      expect(res.status).toBe(200)
      expect(res.text).toBe(expected)
      expect(res.headers.get("content-type")).toBe("application/json")
      expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(expected)))
      expect(headersOf(res)).toEqual(headersOf(framework))
    }
    expect(framework.headers.get("content-type")).toBe("application/json")
  })

  test("a warm catalogue answers without the database (it is served from memory)", async () => {
    const before = await app.get("/v1/plans")
    await app.sql`alter table plans rename to plans_away`
    try {
      const during = await app.get("/v1/plans")
      expect(during.status).toBe(200)
      expect(during.text).toBe(before.text)
    } finally {
      await app.sql`alter table plans_away rename to plans`
    }
  })

  test("a load that fails is not kept: the next request reads again", async () => {
    await admin.createPlan({ name: "Invalidates" })
    await app.sql`alter table plans rename to plans_away`
    try {
      expect((await app.get("/v1/plans")).status).toBe(500)
    } finally {
      await app.sql`alter table plans_away rename to plans`
    }
    expect((await listed()).map((p) => p.name)).toContain("Invalidates")
  })
})

describe("every catalogue write of this process shows on the very next request", () => {
  test("an admin creates a plan", async () => {
    await listed()
    const created = await admin.createPlan({ name: "Fresh" })
    expect((await listed()).map((p): number => p.id)).toContain(created.id)
  })

  test("an admin updates a plan", async () => {
    const plan = await admin.createPlan({ name: "Before" })
    expect((await listed()).find((p) => p.id === plan.id)?.name).toBe("Before")
    const updated = await ok(admin.client.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { name: "After", description: "new" } }))
    expect(updated).toMatchObject({ id: plan.id, name: "After", description: "new" })
    const after = (await listed()).find((p) => p.id === plan.id)
    expect(after).toMatchObject({ name: "After", description: "new" })
    expect((await app.get("/v1/plans")).text).toBe(await expectedText())
  })

  test("a plan deactivated disappears at once, and comes back when activated", async () => {
    const plan = await admin.createPlan({ name: "Seasonal" })
    expect((await listed()).map((p): number => p.id)).toContain(plan.id)
    expect((await ok(admin.client.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { is_active: false } }))).is_active).toBe(false)
    expect((await listed()).map((p): number => p.id)).not.toContain(plan.id)
    expect((await ok(admin.client.catalogAdmin.updatePlan({ path: { plan: plan.id }, payload: { is_active: true } }))).is_active).toBe(true)
    expect((await listed()).map((p): number => p.id)).toContain(plan.id)
  })

  test("an admin creates a cycle (the cycles' table is the catalogue too)", async () => {
    const plan = await admin.createPlan({ name: "Cycled" })
    await listed()
    // a change no writer of this process announces (embedded mode has no other writer; this
    // stands in for one): the warm cache keeps the old list...
    await app.sql`update plans set description = 'changed by hand' where id = ${plan.id}`
    expect((await listed()).find((p) => p.id === plan.id)?.description).toBe("A plan")
    // ...until a cycle is created through the API
    await admin.createCycle(plan.id)
    expect((await listed()).find((p) => p.id === plan.id)?.description).toBe("changed by hand")
  })

  test("seed-demo (run with no cache in its context, as the CLI does) empties the cache", async () => {
    await listed()
    await app.run(seedDemo)
    const names = (await listed()).map((p) => p.name)
    expect(names).toEqual(expect.arrayContaining(["Basic", "Plus", "Unlimited"]))
    expect((await app.get("/v1/plans")).text).toBe(await expectedText())
  })
})

describe("the cache's bookkeeping (a repository whose reads the test releases)", () => {
  const row = (name: string): Plan => ({
    id: PlanId.make(1),
    name,
    description: "",
    bandwidth_limit_gb: 0,
    speed_limit_mbps: null,
    trial_days: 0,
    device_limit: 5,
    usage_reset: "monthly",
    quota_action: "suspend",
    throttle_mbps: null,
    is_active: true
  })

  const harness = Effect.gen(function* () {
    const loads: Array<Deferred.Deferred<ReadonlyArray<Plan>>> = []
    const repo = Layer.succeed(
      CatalogRepo,
      CatalogRepo.make({
        everything: Effect.suspend(() => {
          const gate = Deferred.unsafeMake<ReadonlyArray<Plan>>(FiberId.none)
          loads.push(gate)
          return Effect.map(Deferred.await(gate), (plans) => ({ plans, cycles: [] }))
        })
      } as unknown as Parameters<typeof CatalogRepo.make>[0])
    )
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      CatalogCache.DefaultWithoutDependencies.pipe(Layer.provide(repo), Layer.provide(AppConfig.layer(testConfig()))),
      scope
    )
    const cache = Context.get(context, CatalogCache)
    const request = Effect.map(cache.planListJson, (body) => new TextDecoder().decode(body))
    return { loads, request, close: Scope.close(scope, Exit.void) }
  })

  const waitFor = (cond: () => boolean) =>
    Effect.promise(async () => {
      for (let i = 0; i < 200 && !cond(); i++) await Bun.sleep(1)
      expect(cond()).toBe(true)
    })

  test("concurrent misses share one load; a hit loads nothing", async () => {
    await Effect.runPromise(
      Effect.gen(function* () {
        const { close, loads, request } = yield* harness
        const fibers = yield* Effect.forEach(Array.from({ length: 10 }), () => Effect.fork(request))
        yield* waitFor(() => loads.length === 1)
        yield* Deferred.succeed(loads[0]!, [row("One")])
        const bodies = yield* Effect.forEach(fibers, Fiber.join)
        expect(new Set(bodies).size).toBe(1)
        expect(bodies[0]).toContain('"One"')
        expect(yield* request).toBe(bodies[0]!)
        expect(loads).toHaveLength(1)
        yield* close
      })
    )
  })

  test("a load that started before a change is not kept: the next request loads again", async () => {
    await Effect.runPromise(
      Effect.gen(function* () {
        const { close, loads, request } = yield* harness
        const first = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 1)
        yield* catalogChanged // the catalogue changes while the first load reads
        // a request after the change does not join the load from before it
        const second = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 2)
        // the newer load finishes first, then the older one: the older result is not stored over it
        yield* Deferred.succeed(loads[1]!, [row("New")])
        expect(yield* Fiber.join(second)).toContain('"New"')
        yield* Deferred.succeed(loads[0]!, [row("Old")])
        expect(yield* Fiber.join(first)).toContain('"Old"')
        expect(yield* request).toContain('"New"')
        expect(loads).toHaveLength(2)
        // an old load that ends alone is not stored either: the next request reads again
        yield* catalogChanged
        const before = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 3)
        yield* catalogChanged
        yield* Deferred.succeed(loads[2]!, [row("Stale")])
        yield* Fiber.join(before)
        const after = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 4)
        yield* Deferred.succeed(loads[3]!, [row("Fresh")])
        expect(yield* Fiber.join(after)).toContain('"Fresh"')
        // and a change after a stored load empties it
        yield* catalogChanged
        const third = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 5)
        yield* Deferred.succeed(loads[4]!, [row("Newer")])
        expect(yield* Fiber.join(third)).toContain('"Newer"')
        yield* close
      })
    )
  })

  test("issue 34: a read inside a transaction never waits for another fiber's load (it could hold the connection that load needs)", async () => {
    await Effect.runPromise(
      Effect.gen(function* () {
        const { close, loads, request } = yield* harness
        const outside = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 1)
        // a transaction's read: its own load, not the pending one
        const inside = yield* Effect.fork(Effect.provideService(request, SqlClient.TransactionConnection, [{} as never, 0]))
        yield* waitFor(() => loads.length === 2)
        yield* Deferred.succeed(loads[1]!, [row("Mine")])
        expect(yield* Fiber.join(inside)).toContain('"Mine"')
        // and it keeps nothing: the shared load still fills the cache
        yield* Deferred.succeed(loads[0]!, [row("Shared")])
        expect(yield* Fiber.join(outside)).toContain('"Shared"')
        expect(yield* request).toContain('"Shared"')
        expect(loads).toHaveLength(2)
        yield* close
      })
    )
  })

  test("a client that leaves does not cancel the load others wait for", async () => {
    await Effect.runPromise(
      Effect.gen(function* () {
        const { close, loads, request } = yield* harness
        const leaving = yield* Effect.fork(request)
        yield* waitFor(() => loads.length === 1)
        const staying = yield* Effect.fork(request)
        yield* Fiber.interrupt(leaving)
        yield* Deferred.succeed(loads[0]!, [row("Kept")])
        expect(yield* Fiber.join(staying)).toContain('"Kept"')
        expect(yield* request).toContain('"Kept"')
        expect(loads).toHaveLength(1)
        yield* close
      })
    )
  })
})
