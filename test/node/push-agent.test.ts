import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import { runAgent } from "../../src/node/Agent.ts"
import { NodeClient } from "../../src/node/NodeClient.ts"
import { PushClient } from "../../src/node/Watch.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "../vpn/fixtures.ts"
import { fakeInterface } from "./fakes.ts"

// [D105]: the node agent keeps the push stream: with NODE_POLL_SECONDS=60 a change reaches the
// interface within a second (only the push can do that), and a cut stream resumes by revision.
// The interface is `wg` in memory (fakes.ts); the API is the real one, in process.
let app: TestApp
/** the admin through the typed client of the contract */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

/** the API in process, streaming; `cut()` breaks the open streams and refuses connections until `restore()` */
const streamingFetch = () => {
  let down = false
  const open = new Set<TransformStreamDefaultController<Uint8Array>>()
  const rpcBodies: Array<string> = []
  const fetchImpl = async (input: RequestInfo | URL, init?: RequestInit) => {
    if (down) throw new TypeError("fetch failed: connection refused")
    const request = new Request(input, init)
    if (!request.url.endsWith("/v1/node/rpc")) return app.fetch(request)
    rpcBodies.push(await request.clone().text())
    const response = await app.fetch(request)
    let controller!: TransformStreamDefaultController<Uint8Array>
    const cuttable = new TransformStream<Uint8Array, Uint8Array>({
      start: (c) => {
        controller = c
        open.add(c)
      },
      flush: () => void open.delete(controller)
    })
    void response.body?.pipeTo(cuttable.writable).catch(() => {})
    return new Response(cuttable.readable, { status: response.status, headers: response.headers })
  }
  return {
    layer: Layer.succeed(FetchHttpClient.Fetch, Object.assign(fetchImpl, { preconnect: fetch.preconnect }) as typeof fetch),
    rpcBodies,
    cut: () => {
      down = true
      for (const c of open) c.error(new Error("connection reset"))
      open.clear()
    },
    restore: () => {
      down = false
    }
  }
}

const startAgent = (nodeToken: string, reportSeconds?: number) => {
  const iface = fakeInterface()
  const net = streamingFetch()
  const config = { apiUrl: "http://localhost:3000", token: Redacted.make(nodeToken) }
  const layer = Layer.mergeAll(
    iface.layer,
    Layer.mergeAll(NodeClient.layer(config), PushClient.layer(config)).pipe(Layer.provide(FetchHttpClient.layer), Layer.provide(net.layer))
  )
  const fiber = Effect.runFork(
    runAgent({ iface: "wg0", pollSeconds: 60, version: "test-agent", ...(reportSeconds === undefined ? {} : { reportSeconds }) }).pipe(
      Effect.provide(layer),
      Logger.withMinimumLogLevel(LogLevel.None)
    )
  )
  return { iface, net, stop: () => Effect.runPromise(Fiber.interrupt(fiber)) }
}

const until = async (what: string, done: () => boolean, ms = 3000) => {
  const start = performance.now()
  while (!done()) {
    if (performance.now() - start > ms) throw new Error(`not within ${ms} ms: ${what}`)
    await Bun.sleep(5)
  }
  return performance.now() - start
}

const setup = async () => {
  const plan = await makePlan(app, 0)
  const server = await makeServer(app, { planIds: [plan.planId] })
  const member = async () => {
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const me = await typedClient(app, { token: user.token })
    // the declared 200 answer: the config's text
    const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const devices = await ok(me.vpn.listDevices())
    return { user, me, key: keyOf(conf), deviceId: devices[0]!.id }
  }
  return { server, member }
}

describe("node agent with the push stream [D105]", () => {
  test("NODE_POLL_SECONDS=60: a deleted device, a disabled user and a rotated key leave the interface within 1 s", async () => {
    const { member, server } = await setup()
    const a = await member()
    const b = await member()
    const c = await member()
    const agent = startAgent(server.nodeToken)
    try {
      await until("the first list", () => agent.iface.peers.has(a.key) && agent.iface.peers.has(b.key) && agent.iface.peers.has(c.key))

      expect(typeof (await ok(a.me.vpn.deleteDevice({ path: { device: a.deviceId } })))).toBe("string")
      expect(await until("deleted device gone", () => !agent.iface.peers.has(a.key))).toBeLessThan(1000)

      expect((await ok(staff.accountsAdmin.updateUser({ path: { user: b.user.id }, payload: { status: 0 } }))).status).toBe(0)
      expect(await until("disabled user gone", () => !agent.iface.peers.has(b.key))).toBeLessThan(1000)

      // the declared 200 answer
      await ok(c.me.vpn.rotateDevice({ path: { device: c.deviceId } }))
      expect(await until("old key gone, new key in", () => !agent.iface.peers.has(c.key) && agent.iface.peers.size === 1)).toBeLessThan(1000)

      // the agent reported what it applied (the report follows the apply: give it a moment)
      let shown = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
      for (let i = 0; i < 50 && shown.agent.lag !== 0; i++) {
        await Bun.sleep(20)
        shown = await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))
      }
      expect(shown.agent).toMatchObject({ connected: true, lag: 0, version: "test-agent" })
    } finally {
      await agent.stop()
    }
  })

  test("a cut stream reconnects and resumes from the last revision it applied: the change made meanwhile arrives, once", async () => {
    const { member, server } = await setup()
    const a = await member()
    const b = await member()
    const agent = startAgent(server.nodeToken)
    try {
      await until("the first list", () => agent.iface.peers.size === 2)
      let applied: number | null = null
      for (let i = 0; i < 100 && applied === null; i++) {
        applied = (await ok(staff.vpnAdmin.getServer({ path: { server: server.id } }))).agent.applied_revision
        if (applied === null) await Bun.sleep(20)
      }
      expect(applied).not.toBeNull()
      expect(JSON.parse(agent.net.rpcBodies[0]!.split("\n")[0]!).payload).toEqual({ since: null })

      agent.net.cut()
      expect(typeof (await ok(a.me.vpn.deleteDevice({ path: { device: a.deviceId } })))).toBe("string")
      await Bun.sleep(300)
      expect(agent.iface.peers.has(a.key)).toBe(true) // the stream is down: not yet
      agent.net.restore()
      await until("the change made while away", () => !agent.iface.peers.has(a.key), 8000)
      expect(agent.iface.peers.has(b.key)).toBe(true)
      // the reconnect asked for what came after the revision it held, not the whole list
      const watches = agent.net.rpcBodies.map((body) => JSON.parse(body.split("\n")[0]!)).filter((m) => m.tag === "WatchPeers")
      expect(watches.at(-1)!.payload).toEqual({ since: applied })
      // and that change was applied once: one `wg set ... remove` for the key
      expect(agent.iface.calls.filter((args) => args[1] === a.key && args[2] === "remove")).toHaveLength(1)
    } finally {
      await agent.stop()
    }
  })

  test("NODE_REPORT_SECONDS: counters go between the (60 s) polls, so the quota is followed within a report interval", async () => {
    const { member, server } = await setup()
    const a = await member()
    const agent = startAgent(server.nodeToken, 1)
    try {
      await until("the first list", () => agent.iface.peers.has(a.key))
      await Bun.sleep(500) // the start's poll is over
      agent.iface.traffic(a.key, 4000, 1000)
      // no poll comes for 60 s: only the report loop can count it
      let used = 0
      for (let i = 0; i < 40 && used !== 5000; i++) {
        used = (await ok(a.me.vpn.currentBandwidth())).used_bytes
        if (used !== 5000) await Bun.sleep(100)
      }
      expect(used).toBe(5000)
    } finally {
      await agent.stop()
    }
  })
})
