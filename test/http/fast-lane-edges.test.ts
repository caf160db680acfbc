import { afterAll, expect, spyOn, test } from "bun:test"
import { Effect, Layer, LogLevel } from "effect"
import { DELEGATED_ADDRESS_HEADER } from "../../src/http/ClientAddress.ts"
import { InFlight } from "../../src/http/Drain.ts"
import { type LaneServer, makeFastLane } from "../../src/http/FastLane.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { Metrics } from "../../src/platform/Metrics.ts"
import { RateLimiter } from "../../src/platform/RateLimiter.ts"
import { STATUS_DOWN, STATUS_UP } from "../../src/system/Probe.ts"
import { testConfig } from "../support/app.ts"

/*
 * Issue 27: the fast lane's cases a running server cannot be brought to on demand, on a real Bun
 * server with the lane's routes and a stand-in pipeline (`fetch`): the database down (the
 * status's 503), a request in flight while the probe runs and the closing 503 of a shutdown
 * ([D5]), and the plans handed to the pipeline while the catalogue cache does not answer from
 * memory, with the socket's address. The answers the real pipeline gives for the same cases are
 * pinned in `test/system/probe.test.ts`, `test/http/shutdown.test.ts` and `test/catalog/cache.test.ts`.
 */

const { metrics, limiter } = await Effect.runPromise(
  Effect.all({ metrics: Metrics, limiter: RateLimiter.memory }).pipe(
    Effect.provide(Layer.merge(Metrics.Live.pipe(Layer.provide(AppClock.Live)), AppClock.Live))
  )
)

const recorded: Array<[string, number]> = []
const inFlight = new InFlight()
let databaseUp: () => Promise<boolean> = () => Promise.resolve(true)
let planList: Uint8Array | undefined = new TextEncoder().encode(`{"success":true,"data":[]}`)
const delegated: Array<{ method: string; address: string | null; authorization: string | null }> = []

const routes = makeFastLane({
  config: testConfig({ fastLane: true, logLevel: LogLevel.Info, generalRateLimit: 2 }),
  inFlight,
  figuresOf: () => ({ record: (method, status) => void recorded.push([method, status]) }),
  metrics,
  generalLimiter: limiter,
  databaseUp: () => databaseUp(),
  status: { up: STATUS_UP, down: STATUS_DOWN },
  cachedPlanList: () => planList
})

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  routes: routes as Record<string, { GET: (request: Request, server: LaneServer) => Response | Promise<Response> }>,
  fetch: (request) => {
    delegated.push({
      method: request.method,
      address: request.headers.get(DELEGATED_ADDRESS_HEADER),
      authorization: request.headers.get("authorization")
    })
    return new Response("from the pipeline", { status: 299 })
  }
})
afterAll(() => server.stop(true))
const base = `http://127.0.0.1:${server.port}`
let address = 0
/** a client address of its own (TRUST_PROXY=1): the limit of 2 counts per test */
const fresh = () => ({ "x-forwarded-for": `10.1.0.${++address}` })

test("the database down: 503 with the status's body, Retry-After: 5 and the request id, recorded and logged", async () => {
  databaseUp = () => Promise.resolve(false)
  recorded.length = 0
  const log = spyOn(console, "log").mockImplementation(() => {})
  try {
    const res = await fetch(`${base}/v1/status`, { headers: { ...fresh(), "x-request-id": "trace-down" } })
    expect(res.status).toBe(503)
    expect(await res.text()).toBe(JSON.stringify(STATUS_DOWN))
    expect(res.headers.get("content-type")).toBe("application/json")
    expect(res.headers.get("retry-after")).toBe("5")
    expect(res.headers.get("x-request-id")).toBe("trace-down")
    expect(recorded).toEqual([["GET", 503]])
    // the lane writes its lines together, once the event loop's turn is over
    await Bun.sleep(20)
    const lines = log.mock.calls.flatMap((c) => String(c[0]).split("\n"))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/ message=request method=GET path=\/v1\/status status=503 ms=[\d.]+ request_id=trace-down$/)
  } finally {
    log.mockRestore()
    databaseUp = () => Promise.resolve(true)
  }
})

test("counted in flight while the probe runs; once shutdown starts, the closing 503, neither recorded nor logged", async () => {
  let answer: (up: boolean) => void = () => {}
  databaseUp = () => new Promise((resolve) => (answer = resolve))
  recorded.length = 0
  const pending = fetch(`${base}/v1/status`, { headers: fresh() })
  for (let i = 0; i < 100 && inFlight.count === 0; i++) await Bun.sleep(10)
  expect(inFlight.count).toBe(1)
  answer(true)
  const res = await pending
  expect(res.status).toBe(200)
  expect(await res.text()).toBe(JSON.stringify(STATUS_UP))
  expect(inFlight.count).toBe(0)
  databaseUp = () => Promise.resolve(true)

  const log = spyOn(console, "log").mockImplementation(() => {})
  recorded.length = 0
  inFlight.closing = true
  const listener = inFlight.listener
  inFlight.listener = undefined // the test's server must stay up: drained() stops the listener
  try {
    for (const path of ["/v1/status", "/v1/plans"]) {
      const closing = await fetch(`${base}${path}`, { headers: fresh() })
      expect(closing.status).toBe(503)
      expect(await closing.text()).toBe(JSON.stringify({ success: false, message: "Service temporarily unavailable." }))
      expect(closing.headers.get("retry-after")).toBe("5")
      expect(closing.headers.get("connection")).toBe("close")
      expect(closing.headers.get("x-request-id")).toBeNull()
    }
    expect(recorded).toEqual([])
    await Bun.sleep(20)
    expect(log.mock.calls).toHaveLength(0)
  } finally {
    inFlight.closing = false
    inFlight.listener = listener
    log.mockRestore()
  }
})

test("the plans while the cache does not answer, and a bearer token under the general limit: handed to the pipeline with the socket's address", async () => {
  recorded.length = 0
  delegated.length = 0
  planList = undefined
  const uncached = await fetch(`${base}/v1/plans`, { headers: { ...fresh(), [DELEGATED_ADDRESS_HEADER]: "6.6.6.6" } })
  expect(uncached.status).toBe(299)
  expect(await uncached.text()).toBe("from the pipeline")
  planList = new TextEncoder().encode(`{"success":true,"data":[]}`)
  const token = await fetch(`${base}/v1/status`, { method: "HEAD", headers: { ...fresh(), authorization: "Bearer abc" } })
  expect(token.status).toBe(299)
  // the client's own copy of the header is replaced; nothing was recorded by the lane (the pipeline records them)
  expect(delegated).toEqual([
    { method: "GET", address: "127.0.0.1", authorization: null },
    { method: "HEAD", address: "127.0.0.1", authorization: "Bearer abc" }
  ])
  expect(recorded).toEqual([])
})

test("the general limit counts lane requests per address and answers 429 with Retry-After", async () => {
  recorded.length = 0
  const client = fresh()
  const statuses: Array<number> = []
  for (const path of ["/v1/plans", "/v1/status", "/v1/plans"]) statuses.push((await fetch(`${base}${path}`, { headers: client })).status)
  expect(statuses).toEqual([200, 200, 429])
  const refused = await fetch(`${base}/v1/plans`, { headers: { ...client, "x-request-id": "trace-429" } })
  expect(await refused.text()).toBe(JSON.stringify({ success: false, message: "Too Many Attempts." }))
  expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
  expect(refused.headers.get("x-request-id")).toBe("trace-429")
  expect(recorded).toEqual([["GET", 200], ["GET", 200], ["GET", 429], ["GET", 429]])
})
