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
import { watch } from "../support/node-rpc.ts"
import { makePlan, makeServer, makeService } from "../vpn/fixtures.ts"
import { fakeManagement } from "./fakes.ts"

// [D106]: an OpenVPN server's node list and stream carry its credentials, and the agent ends a
// disabled user's open sessions through OpenVPN's management interface within a second.
let app: TestApp
/** the admin through the typed client of the contract */
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

/** a user with two devices on a plan granting an OpenVPN and a WireGuard server */
const setup = async () => {
  const plan = await makePlan(app, 0)
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
  const wg = await makeServer(app, { planIds: [plan.planId] })
  const user = await app.createUser()
  await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  const phone = await ok(me.vpn.createDevice({ payload: { name: "Phone", platform: "ios" } }))
  const laptop = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
  return { ovpn, wg, user, me, phone, laptop }
}

/** enables (1) or disables (0) a user through the admin API: its declared 200 answer */
const setStatus = async (user: { readonly id: number }, status: 0 | 1) =>
  expect((await ok(staff.accountsAdmin.updateUser({ path: { user: user.id }, payload: { status } }))).status).toBe(status)

const poll = async (token: string, since?: number) => {
  const res = await app.get(`/v1/node/peers${since === undefined ? "" : `?since=${since}`}`, { token })
  expect(res.status).toBe(200)
  return { data: res.body.data as Array<Record<string, unknown>>, revision: res.body.meta.revision as number }
}

describe("an OpenVPN server's node list [D106]", () => {
  test("{username, enabled, speed_limit_mbps}; a disabled user's entries enabled: false; a deleted device's username removed", async () => {
    const { laptop, me, ovpn, phone, user, wg } = await setup()
    const first = await poll(ovpn.nodeToken)
    expect(first.data).toEqual([
      { username: phone.openvpn.username, enabled: true, speed_limit_mbps: null },
      { username: laptop.openvpn.username, enabled: true, speed_limit_mbps: null }
    ])
    // a WireGuard server's list never names usernames
    expect((await poll(wg.nodeToken)).data.some((e) => "username" in e)).toBe(false)

    await setStatus(user, 0)
    const disabled = await poll(ovpn.nodeToken, first.revision)
    expect(disabled.data).toEqual([
      { username: phone.openvpn.username, enabled: false, speed_limit_mbps: null },
      { username: laptop.openvpn.username, enabled: false, speed_limit_mbps: null }
    ])
    await setStatus(user, 1)
    const back = await poll(ovpn.nodeToken, disabled.revision)

    expect(typeof (await ok(me.vpn.deleteDevice({ path: { device: phone.id } })))).toBe("string")
    const removed = await poll(ovpn.nodeToken, back.revision)
    expect(removed.data).toEqual([{ username: phone.openvpn.username, removed: true }])
    // the WireGuard server is not told about the username
    expect((await poll(wg.nodeToken, back.revision)).data).toEqual([])
  })

  test("the stream carries the same entries", async () => {
    const { ovpn, phone, user } = await setup()
    const stream = watch(app, ovpn.nodeToken, null)
    try {
      await stream.waitFor((b) => b.full)
      await setStatus(user, 0)
      await stream.waitFor((b) => b.peers.some((p) => "username" in p && p.username === phone.openvpn.username && "enabled" in p && !p.enabled))
    } finally {
      await stream.close()
    }
  })
})

describe("the OpenVPN agent with OPENVPN_MANAGEMENT [D106]", () => {
  test("parses host:port and socket paths", () => {
    expect(parseManagementTarget("127.0.0.1:7505")).toEqual({ host: "127.0.0.1", port: 7505 })
    expect(parseManagementTarget("[::1]:7505")).toEqual({ host: "::1", port: 7505 })
    expect(parseManagementTarget("/run/openvpn/mgmt.sock")).toEqual({ path: "/run/openvpn/mgmt.sock" })
    expect(parseManagementTarget("localhost")).toBeUndefined()
    expect(parseManagementTarget("h:99999")).toBeUndefined()
  })

  test("a disabled user's sessions are killed within 1 s of the commit; a deleted device's too; enabled ones are left alone", async () => {
    const { laptop, me, ovpn, phone, user } = await setup()
    const other = await app.createUser()
    const connected = new Set([phone.openvpn.username, laptop.openvpn.username])
    const management = await fakeManagement(connected)
    const viaHandler = Object.assign((input: RequestInfo | URL, init?: RequestInit) => app.fetch(new Request(input, init)), {
      preconnect: fetch.preconnect
    }) as typeof fetch
    const config = { apiUrl: "http://localhost:3000", token: Redacted.make(ovpn.nodeToken) }
    const layer = Layer.mergeAll(
      Layer.mergeAll(PushClient.layer(config), NodeClient.layer(config)).pipe(
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(Layer.succeed(FetchHttpClient.Fetch, viaHandler))
      ),
      OpenVpnManagement.layer(parseManagementTarget(management.target)!)
    )
    const fiber = Effect.runFork(runOpenVpnAgent({ pollSeconds: 60, version: "test" }).pipe(Effect.provide(layer), Logger.withMinimumLogLevel(LogLevel.None)))
    try {
      // connected: the agent reported its first revision
      for (let i = 0; i < 200; i++) {
        if ((await ok(staff.vpnAdmin.getServer({ path: { server: ovpn.id } }))).agent.applied_revision !== null) break
        await Bun.sleep(20)
      }
      expect(management.kills).toEqual([])

      // another user's change kills nothing here
      await setStatus(other, 0)
      const committed = performance.now()
      await setStatus(user, 0)
      for (let i = 0; i < 150 && management.kills.length < 2; i++) await Bun.sleep(10)
      expect(management.kills.map((k) => k.name).sort()).toEqual([laptop.openvpn.username, phone.openvpn.username].sort())
      for (const k of management.kills) expect(k.at - committed).toBeLessThan(1000)
      expect(connected.size).toBe(0)

      // enabled again, then a device deleted: its username is killed
      await setStatus(user, 1)
      await Bun.sleep(300)
      const before = management.kills.length
      expect(typeof (await ok(me.vpn.deleteDevice({ path: { device: phone.id } })))).toBe("string")
      for (let i = 0; i < 150 && management.kills.length === before; i++) await Bun.sleep(10)
      expect(management.kills.slice(before).map((k) => k.name)).toEqual([phone.openvpn.username])
    } finally {
      await Effect.runPromise(Fiber.interrupt(fiber))
      management.close()
    }
  })
})
