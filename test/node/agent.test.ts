import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import * as TestContext from "effect/TestContext"
import { type AgentState, backoffSeconds, cycle, diffPeers, initialState, runAgent } from "../../src/node/Agent.ts"
import { parseDump } from "../../src/node/Wg.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "../vpn/fixtures.ts"
import { appFetch, fakeInterface, type FetchLike, nodeClientLayer } from "./fakes.ts"

// [D93]: the node agent's sync, counters and back-off, against the real API in process and a
// `wg` that keeps its interface in memory.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const OPTIONS = { iface: "wg0", pollSeconds: 10 }
let keys = 0
const newKey = Effect.sync(() => `test-report-${++keys}`)

const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Logger.withMinimumLogLevel(effect, LogLevel.None)

/** One agent: its state, its interface and its way to the API. */
const agent = (nodeToken: string, fetchImpl: FetchLike) => {
  const iface = fakeInterface()
  const state = Effect.runSync(Ref.make<AgentState>(initialState))
  const layer = Layer.mergeAll(iface.layer, nodeClientLayer(nodeToken, fetchImpl))
  const once = () => Effect.runPromise(quiet(cycle(OPTIONS, state, newKey).pipe(Effect.provide(layer))))
  return { iface, state, once }
}

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

/** a user with an active service on the plan, and the public key of their downloaded config */
const member = async (server: { readonly id: number }, plan: { readonly planId: number; readonly cycleId: number }) => {
  const user = await app.createUser()
  const serviceId = await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  // the declared 200 answer: the config's text
  const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
  return { user, serviceId, key: keyOf(conf), address: /^Address = (.+)$/m.exec(conf)![1]! }
}

const usedBytes = async (token: string): Promise<number> => {
  const me = await typedClient(app, { token })
  return (await ok(me.vpn.currentBandwidth())).used_bytes
}

describe("node agent sync [D93]", () => {
  test("puts the enabled peers on the interface, removes the others (a disabled one too), and never touches the interface's own key or port", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await member(server, plan)
    const b = await member(server, plan)
    await app.sql`update services set status = 'suspended' where id = ${b.serviceId}`
    const api = appFetch(app)
    const node = agent(server.nodeToken, api.fetchImpl)
    node.iface.peers.set("STALE", { allowedIps: "10.66.9.9/32", rx: 0, tx: 0 })

    const first = await node.once()
    expect(Option.isNone(first.failure)).toBe(true)
    expect([...node.iface.peers.keys()]).toEqual([a.key])
    expect(node.iface.peers.get(a.key)!.allowedIps).toBe(a.address)
    // only `peer <key> ...`: never private-key, listen-port or fwmark
    expect(node.iface.calls.every((args) => args[0] === "peer")).toBe(true)
    expect(node.iface.calls).toContainEqual(["peer", "STALE", "remove"])

    // nothing changed: nothing to do
    node.iface.calls.length = 0
    await node.once()
    expect(node.iface.calls).toEqual([])

    // b's service usable again: added at the next poll; a's address changed by hand: set back
    await app.sql`update services set status = 'active' where id = ${b.serviceId}`
    node.iface.peers.set(a.key, { allowedIps: "10.66.200.200/32", rx: 0, tx: 0 })
    await node.once()
    expect(new Set(node.iface.peers.keys())).toEqual(new Set([a.key, b.key]))
    expect(node.iface.peers.get(a.key)!.allowedIps).toBe(a.address)
  })

  test("reports the interface's cumulative counters with one Idempotency-Key per report: bytes counted once [D94]", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await member(server, plan)
    const api = appFetch(app)
    const node = agent(server.nodeToken, api.fetchImpl)
    await node.once()
    // no traffic yet: no report at all
    expect(api.seen.filter((r) => r.path === "/v1/node/counters")).toEqual([])

    node.iface.traffic(a.key, 1000, 500)
    await node.once()
    expect(await usedBytes(a.user.token)).toBe(1500)
    // the same totals again add nothing
    await node.once()
    expect(await usedBytes(a.user.token)).toBe(1500)
    const reports = api.seen.filter((r) => r.path === "/v1/node/counters")
    expect(reports).toHaveLength(2)
    expect(JSON.parse(reports[0]!.body)).toEqual([{ public_key: a.key, rx_total: 1000, tx_total: 500, latest_handshake: 0 }])
    expect(new Set(reports.map((r) => r.key)).size).toBe(2)
    expect(reports.every((r) => r.key !== null)).toBe(true)
  })

  test("while the API is away the interface keeps its peers; the traffic of then is counted once when it is back", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await member(server, plan)
    const api = appFetch(app)
    const node = agent(server.nodeToken, api.fetchImpl)
    await node.once()
    node.iface.traffic(a.key, 100, 0)
    await node.once()

    api.setDown(true)
    node.iface.traffic(a.key, 2000, 0)
    const away = await node.once()
    expect(Option.isSome(away.failure)).toBe(true)
    node.iface.traffic(a.key, 300, 0)
    expect(Option.isSome((await node.once()).failure)).toBe(true)
    expect([...node.iface.peers.keys()]).toEqual([a.key])
    expect(node.iface.calls.filter((args) => args[2] === "remove")).toEqual([])

    api.setDown(false)
    expect(Option.isNone((await node.once()).failure)).toBe(true)
    expect(await usedBytes(a.user.token)).toBe(2400)
  })

  test("totals not delivered before a peer left the interface are sent with a later report (the sync does not wait for them)", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await member(server, plan)
    const api = appFetch(app)
    let countersDown = false
    const node = agent(server.nodeToken, (request) =>
      countersDown && new URL(request.url).pathname === "/v1/node/counters" ? Promise.reject(new TypeError("fetch failed")) : api.fetchImpl(request)
    )
    await node.once()
    node.iface.traffic(a.key, 700, 70)
    // the report fails, the peer list answers: the peer leaves (its service suspended) with its totals unsent
    countersDown = true
    await app.sql`update services set status = 'suspended' where id = ${a.serviceId}`
    const unreported = await node.once()
    // a failed report alone is no reason to back off: the peers were synced
    expect(Option.isSome(unreported.reportFailure)).toBe(true)
    expect(Option.isNone(unreported.failure)).toBe(true)
    expect(node.iface.peers.size).toBe(0)
    countersDown = false
    await app.sql`update services set status = 'active' where id = ${a.serviceId}`
    await node.once()
    expect(await usedBytes(a.user.token)).toBe(770)
  })

  test("a wg failure is a failed cycle that changes nothing", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    await member(server, plan)
    const api = appFetch(app)
    const node = agent(server.nodeToken, api.fetchImpl)
    node.iface.setBroken(true)
    const outcome = await node.once()
    expect(Option.getOrThrow(outcome.failure)).toContain("No such device")
    expect(api.seen).toEqual([])
  })
})

describe("node sync by revision [D92], as the agent uses it", () => {
  const K = (n: number) => `${String(n).repeat(43).slice(0, 43)}=`
  const peer = (n: number, enabled = true) => ({ public_key: K(n), allowed_ips: `10.66.0.${n}/32`, enabled })
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

  test("sends ?since=<meta.revision>, applies changed and removed peers, and falls back to the full list on 422", async () => {
    const asked: Array<string> = []
    const answers: Array<Response> = [
      json(200, { success: true, data: [peer(2), peer(3), peer(4, false)], meta: { revision: "r1" } }),
      json(200, { success: true, data: [{ public_key: K(3), removed: true }, peer(5), peer(2, false)], meta: { revision: "r2" } }),
      json(422, { success: false, message: "The given data was invalid.", errors: { since: ["The since field is invalid."] } }),
      json(200, { success: true, data: [peer(2), peer(6)], meta: { revision: 9 } }),
      json(200, { success: true, data: [], meta: { revision: 9 } })
    ]
    const node = agent("token", async (request) => {
      const url = new URL(request.url)
      if (url.pathname !== "/v1/node/peers") return json(200, { success: true, data: { accepted: 0 } })
      asked.push(url.search)
      return answers.shift()!
    })
    await node.once()
    expect(new Set(node.iface.peers.keys())).toEqual(new Set([K(2), K(3)]))
    await node.once()
    expect([...node.iface.peers.keys()]).toEqual([K(5)])
    await node.once()
    expect(new Set(node.iface.peers.keys())).toEqual(new Set([K(2), K(6)]))
    await node.once()
    expect(asked).toEqual(["", "?since=r1", "?since=r2", "", "?since=9"])
  })

  test("an API without meta.revision is asked for the full list every time", async () => {
    const asked: Array<string> = []
    const node = agent("token", async (request) => {
      asked.push(new URL(request.url).search)
      return json(200, { success: true, data: [peer(2)] })
    })
    await node.once()
    await node.once()
    expect(asked).toEqual(["", ""])
    expect([...node.iface.peers.keys()]).toEqual([K(2)])
  })
})

describe("back-off while the API is away [D93]", () => {
  test("doubles from the poll interval up to 60 s between tries", () => {
    expect([1, 2, 3, 4, 5, 9].map((n) => backoffSeconds(n, 10))).toEqual([10, 20, 40, 60, 60, 60])
    expect([1, 2, 3, 4, 5, 6, 7, 30].map((n) => backoffSeconds(n, 1))).toEqual([1, 2, 4, 8, 16, 32, 60, 60])
    expect(backoffSeconds(0, 10)).toBe(10)
  })

  test("the running agent tries at 0, 10, 30, 70, 130, 190 s, then polls every 10 s again once the API answers", async () => {
    const tries: Array<number> = []
    let up = false
    const iface = fakeInterface()
    const layer = Layer.mergeAll(
      iface.layer,
      nodeClientLayer("token", async () => {
        tries.push(now)
        if (!up) throw new TypeError("fetch failed")
        return new Response(JSON.stringify({ success: true, data: [] }), { status: 200, headers: { "content-type": "application/json" } })
      })
    )
    let now = 0
    const tick = () => new Promise((resolve) => setTimeout(resolve, 2))
    await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(quiet(runAgent(OPTIONS).pipe(Effect.provide(layer))))
        yield* Effect.promise(tick)
        for (let t = 1; t <= 260; t++) {
          now = t
          if (t === 200) up = true
          yield* TestClock.adjust("1 second")
          yield* Effect.promise(tick)
        }
        yield* Fiber.interrupt(fiber)
      }).pipe(Effect.provide(TestContext.TestContext))
    )
    // each failed try is one request (the peer list: no traffic, no report)
    expect(tries.filter((t) => t < 200)).toEqual([0, 10, 30, 70, 130, 190])
    // back at 250 (190 + 60), then every 10 s
    expect(tries.filter((t) => t >= 200)).toEqual([250, 260])
  }, 20_000)
})

describe("pure parts", () => {
  test("wg show dump: the interface line is skipped, peers read with their allowed IPs and counters", () => {
    const dump = [
      "cHJpdmF0ZQ==\tcHVibGlj\t51820\toff",
      "KEY1=\t(none)\t10.240.1.2:5000\t10.66.0.2/32,fd42::2/128\t1700000000\t123\t456\t25",
      "KEY2=\t(none)\t(none)\t(none)\t0\t0\t0\toff",
      ""
    ].join("\n")
    expect(parseDump(dump)).toEqual([
      { publicKey: "KEY1=", allowedIps: ["10.66.0.2/32", "fd42::2/128"], rx: 123, tx: 456, latestHandshake: 1700000000 },
      { publicKey: "KEY2=", allowedIps: [], rx: 0, tx: 0, latestHandshake: 0 }
    ])
  })

  test("the difference: set what is missing or addressed otherwise, remove what is not wanted", () => {
    const desired = new Map([
      ["A", ["10.66.0.2/32"]],
      ["B", ["10.66.0.3/32", "fd42::3/128"]]
    ])
    const actual = parseDump("x\tx\t1\toff\nB\t(none)\t(none)\tfd42::3/128,10.66.0.3/32\t0\t0\t0\toff\nC\t(none)\t(none)\t10.66.0.4/32\t0\t0\t0\toff\n")
    expect(diffPeers(desired, actual)).toEqual({ set: [{ publicKey: "A", allowedIps: ["10.66.0.2/32"] }], remove: ["C"] })
  })
})
