import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import { OpenVpnManagement, parseManagementTarget } from "../../src/node/Management.ts"
import { NodeClient } from "../../src/node/NodeClient.ts"
import { runOpenVpnAgent } from "../../src/node/OpenVpnFollow.ts"
import { PushClient } from "../../src/node/Watch.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "../vpn/fixtures.ts"
import { fakeManagement } from "./fakes.ts"

// Issue 34, [D106] and [D105] for the OpenVPN agent: a replaced password ends the device's open
// sessions, and with the push stream down the agent still follows the list by polling.
let app: TestApp
/** the admin through the typed client of the contract */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

const setup = async () => {
  const plan = await makePlan(app, 0)
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
  const user = await app.createUser()
  await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  const phone = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
  const laptop = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
  return { ovpn, user, me, phone, laptop }
}

/** the agent against the API in process; `stream: false`: the push stream never connects */
const startAgent = async (nodeToken: string, options: { readonly stream: boolean; readonly pollSeconds: number }, connected: Set<string>) => {
  const management = await fakeManagement(connected)
  const viaHandler = Object.assign(
    async (input: RequestInfo | URL, init?: RequestInit) => {
      const request = new Request(input, init)
      if (!options.stream && request.url.endsWith("/v1/node/rpc")) throw new TypeError("fetch failed: connection refused")
      return app.fetch(request)
    },
    { preconnect: fetch.preconnect }
  ) as typeof fetch
  const config = { apiUrl: "http://localhost:3000", token: Redacted.make(nodeToken) }
  const layer = Layer.mergeAll(
    Layer.mergeAll(PushClient.layer(config), NodeClient.layer(config)).pipe(
      Layer.provide(FetchHttpClient.layer),
      Layer.provide(Layer.succeed(FetchHttpClient.Fetch, viaHandler))
    ),
    OpenVpnManagement.layer(parseManagementTarget(management.target)!)
  )
  const fiber = Effect.runFork(
    runOpenVpnAgent({ pollSeconds: options.pollSeconds, version: "test" }).pipe(Effect.provide(layer), Logger.withMinimumLogLevel(LogLevel.None))
  )
  return {
    kills: management.kills,
    stop: async () => {
      await Effect.runPromise(Fiber.interrupt(fiber))
      management.close()
    }
  }
}

const waitFor = async (done: () => boolean, ms: number) => {
  const start = performance.now()
  while (!done() && performance.now() - start < ms) await Bun.sleep(10)
  return done()
}

describe("the OpenVPN agent (issue 34)", () => {
  test("[D106] a rotated device password ends that device's sessions within 1 s, once; the other device's stay", async () => {
    const { laptop, me, ovpn, phone } = await setup()
    const connected = new Set([phone.openvpn.username, laptop.openvpn.username])
    const agent = await startAgent(ovpn.nodeToken, { stream: true, pollSeconds: 60 }, connected)
    try {
      for (let i = 0; i < 200; i++) {
        if ((await ok(staff.vpnAdmin.getServer({ path: { server: ovpn.id } }))).agent.applied_revision !== null) break
        await Bun.sleep(20)
      }
      const committed = performance.now()
      // the declared 200 answer
      await ok(me.vpn.rotateDevice({ path: { device: phone.id } }))
      expect(await waitFor(() => agent.kills.length > 0, 1500)).toBe(true)
      expect(agent.kills[0]!.at - committed).toBeLessThan(1000)
      await Bun.sleep(300)
      expect(agent.kills.map((k) => k.name)).toEqual([phone.openvpn.username])
      expect(connected.has(laptop.openvpn.username)).toBe(true)
    } finally {
      await agent.stop()
    }
  })

  test("[D105] with the stream down it polls: a disabled user's and a rotated device's sessions still end", async () => {
    const { laptop, me, ovpn, phone, user } = await setup()
    const connected = new Set([phone.openvpn.username, laptop.openvpn.username])
    const agent = await startAgent(ovpn.nodeToken, { stream: false, pollSeconds: 1 }, connected)
    try {
      // the first poll takes the list
      await Bun.sleep(1500)
      expect(agent.kills).toEqual([])
      // the declared 200 answer
      await ok(me.vpn.rotateDevice({ path: { device: laptop.id } }))
      expect(await waitFor(() => agent.kills.length >= 1, 3000)).toBe(true)
      expect(agent.kills.map((k) => k.name)).toEqual([laptop.openvpn.username])
      expect((await ok(staff.accountsAdmin.updateUser({ path: { user: user.id }, payload: { status: 0 } }))).status).toBe(0)
      expect(await waitFor(() => agent.kills.length >= 3, 3000)).toBe(true)
      expect(
        agent.kills
          .slice(1)
          .map((k) => k.name)
          .sort()
      ).toEqual([laptop.openvpn.username, phone.openvpn.username].sort())
    } finally {
      await agent.stop()
    }
  })
})
