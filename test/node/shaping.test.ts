import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Ref from "effect/Ref"
import { type AgentState, cycle, initialState } from "../../src/node/Agent.ts"
import type { PeerEntry } from "../../src/node/NodeClient.ts"
import { makeShaper } from "../../src/node/Shaping.ts"
import { type CommandRunner, make as makeTc, Tc, TcFailed } from "../../src/node/Tc.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makeServer, makeService } from "../vpn/fixtures.ts"
import { appFetch, fakeInterface, nodeClientLayer } from "./fakes.ts"

// [D103]: the tc module, checked by the commands it issues (an injected command runner stands in
// for `tc` and `ip`; the effect on real traffic is proven by scripts/check-tunnel.sh with iperf3),
// and the agent's reconciler fed by the real API.

/** a runner that records every command; `failOn` makes matching commands fail */
const recorder = () => {
  const calls: Array<string> = []
  let failOn: RegExp | undefined
  let qdiscs = ""
  const run: CommandRunner = (argv) =>
    Effect.suspend(() => {
      const line = argv.join(" ")
      calls.push(line)
      if (failOn?.test(line)) return Effect.fail(new TcFailed({ command: line, message: "RTNETLINK answers: Operation not permitted" }))
      return Effect.succeed(line.includes("qdisc show") ? qdiscs : "")
    })
  return {
    run,
    calls,
    take: () => calls.splice(0),
    setFailOn: (r: RegExp | undefined) => {
      failOn = r
    },
    setQdiscs: (text: string) => {
      qdiscs = text
    }
  }
}

const RESET_WG0 = [
  "tc qdisc del dev wg0 root",
  "tc qdisc del dev wg0 ingress",
  "ip link add ifbwg0 type ifb",
  "ip link set ifbwg0 up",
  "tc qdisc del dev ifbwg0 root",
  "tc qdisc add dev wg0 root handle 1: htb default 0",
  "tc qdisc add dev ifbwg0 root handle 1: htb default 0",
  "tc qdisc add dev wg0 handle ffff: ingress",
  "tc filter add dev wg0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev ifbwg0"
]

/** what a class costs: its rate and filters on the device (dst) and on the IFB (src) */
const classOf = (id: string, prio4: number, mbps: number, v4: string, v6?: string) =>
  [
    ["wg0", "dst"],
    ["ifbwg0", "src"]
  ].flatMap(([dev, dir]) => [
    `tc class replace dev ${dev} parent 1: classid 1:${id} htb rate ${mbps}mbit ceil ${mbps}mbit`,
    `tc filter del dev ${dev} parent 1: prio ${prio4}`,
    `tc filter del dev ${dev} parent 1: prio ${prio4 + 1}`,
    `tc filter add dev ${dev} parent 1: protocol ip prio ${prio4} u32 match ip ${dir} ${v4} flowid 1:${id}`,
    ...(v6 === undefined ? [] : [`tc filter add dev ${dev} parent 1: protocol ipv6 prio ${prio4 + 1} u32 match ip6 ${dir} ${v6} flowid 1:${id}`])
  ])

const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Logger.withMinimumLogLevel(effect, LogLevel.None)

describe("the tc module [D103]", () => {
  test("reset: HTB default 0 on the device and its IFB, ingress redirected with mirred; absent things may be absent", async () => {
    const r = recorder()
    await Effect.runPromise(makeTc(r.run).reset("wg0"))
    expect(r.take()).toEqual(RESET_WG0)
    // only the 'make sure it is gone' steps may fail
    r.setFailOn(/ del |link add/)
    await Effect.runPromise(makeTc(r.run).reset("wg0"))
    r.setFailOn(/qdisc add dev wg0 root/)
    const failed = await Effect.runPromise(Effect.either(makeTc(r.run).reset("wg0")))
    expect(failed._tag).toBe("Left")
  })

  test("a class both ways: dst on the device, src on the IFB, IPv4 and IPv6 filters at the class's own priorities", async () => {
    const r = recorder()
    const tc = makeTc(r.run)
    await Effect.runPromise(tc.setClass("wg0", 26, 10, ["10.66.0.2/32", "fd42::2/128"]))
    expect(r.take()).toEqual(classOf("1a", 52, 10, "10.66.0.2/32", "fd42::2/128"))
    await Effect.runPromise(tc.setRate("wg0", 26, 5))
    expect(r.take()).toEqual([
      "tc class replace dev wg0 parent 1: classid 1:1a htb rate 5mbit ceil 5mbit",
      "tc class replace dev ifbwg0 parent 1: classid 1:1a htb rate 5mbit ceil 5mbit"
    ])
    await Effect.runPromise(tc.removeClass("wg0", 26))
    expect(r.take()).toEqual([
      "tc filter del dev wg0 parent 1: prio 52",
      "tc filter del dev wg0 parent 1: prio 53",
      "tc class del dev wg0 classid 1:1a",
      "tc filter del dev ifbwg0 parent 1: prio 52",
      "tc filter del dev ifbwg0 parent 1: prio 53",
      "tc class del dev ifbwg0 classid 1:1a"
    ])
    // something that is not an address never reaches tc
    await Effect.runPromise(tc.setClass("wg0", 1, 10, ["10.66.0.3/32", "-v;reboot", "(none)"]))
    expect(r.take().filter((c) => c.includes("filter add"))).toEqual([
      "tc filter add dev wg0 parent 1: protocol ip prio 2 u32 match ip dst 10.66.0.3/32 flowid 1:1",
      "tc filter add dev ifbwg0 parent 1: protocol ip prio 2 u32 match ip src 10.66.0.3/32 flowid 1:1"
    ])
  })

  test("ensure makes the roots only when they are missing (OpenVPN's per-session scripts)", async () => {
    const r = recorder()
    const tc = makeTc(r.run)
    await Effect.runPromise(tc.ensure("wg0"))
    expect(r.take()).toEqual(["tc qdisc show dev wg0", "tc qdisc show dev ifbwg0", ...RESET_WG0])
    r.setQdiscs("qdisc htb 1: root refcnt 2 r2q 10 default 0\nqdisc ingress ffff: parent ffff:fff1 ----------------\n")
    await Effect.runPromise(tc.ensure("wg0"))
    expect(r.take()).toEqual(["tc qdisc show dev wg0", "tc qdisc show dev ifbwg0"])
  })
})

describe("the shaper: classes follow the list [D103]", () => {
  const entry = (key: string, ips: string, mbps: number | null, enabled = true): PeerEntry => ({
    public_key: key,
    allowed_ips: ips,
    enabled,
    speed_limit_mbps: mbps
  })

  test("first list replaces whatever was there; limited peers get classes, unlimited ones none; changes add, re-rate and remove", async () => {
    const r = recorder()
    const shaper = await Effect.runPromise(makeShaper("wg0").pipe(Effect.provide(Layer.succeed(Tc, makeTc(r.run)))))
    const first = await Effect.runPromise(
      shaper.apply([entry("A", "10.66.0.2/32", 10), entry("B", "10.66.0.3/32", null), entry("C", "10.66.0.4/32, fd42::4/128", 20)], true)
    )
    expect(first).toEqual({ added: 2, changed: 0, removed: 0 })
    expect(r.take()).toEqual([...RESET_WG0, ...classOf("1", 2, 10, "10.66.0.2/32"), ...classOf("2", 4, 20, "10.66.0.4/32", "fd42::4/128")])

    // the plan's limit changed: a rate change only
    expect(await Effect.runPromise(shaper.apply([entry("A", "10.66.0.2/32", 5)], false))).toEqual({ added: 0, changed: 1, removed: 0 })
    expect(r.take()).toEqual([
      "tc class replace dev wg0 parent 1: classid 1:1 htb rate 5mbit ceil 5mbit",
      "tc class replace dev ifbwg0 parent 1: classid 1:1 htb rate 5mbit ceil 5mbit"
    ])
    // a rotated key keeps its address (and class); nothing to do
    await Effect.runPromise(shaper.apply([{ public_key: "A", removed: true }, entry("A2", "10.66.0.2/32", 5)], false))
    expect(r.take()).toEqual([])
    // C disabled, B limited now: C's class goes, B gets the lowest free id
    expect(await Effect.runPromise(shaper.apply([entry("C", "10.66.0.4/32, fd42::4/128", 20, false), entry("B", "10.66.0.3/32", 7)], false))).toEqual({
      added: 1,
      changed: 0,
      removed: 1
    })
    const calls = r.take()
    expect(calls.slice(0, 6)).toEqual([
      "tc filter del dev wg0 parent 1: prio 4",
      "tc filter del dev wg0 parent 1: prio 5",
      "tc class del dev wg0 classid 1:2",
      "tc filter del dev ifbwg0 parent 1: prio 4",
      "tc filter del dev ifbwg0 parent 1: prio 5",
      "tc class del dev ifbwg0 classid 1:2"
    ])
    expect(calls.slice(6)).toEqual(classOf("2", 4, 7, "10.66.0.3/32"))
    // a full list without A2: its class goes
    await Effect.runPromise(shaper.apply([entry("B", "10.66.0.3/32", 7)], true))
    expect(r.take()).toContain("tc class del dev wg0 classid 1:1")
  })

  test("a failed tc: the next apply replaces the shaping whole", async () => {
    const r = recorder()
    const shaper = await Effect.runPromise(makeShaper("wg0").pipe(Effect.provide(Layer.succeed(Tc, makeTc(r.run)))))
    r.setFailOn(/class replace/)
    const failed = await Effect.runPromise(Effect.either(shaper.apply([entry("A", "10.66.0.2/32", 10)], true)))
    expect(failed._tag).toBe("Left")
    r.take()
    r.setFailOn(undefined)
    await Effect.runPromise(shaper.apply([], false))
    expect(r.take()).toEqual([...RESET_WG0, ...classOf("1", 2, 10, "10.66.0.2/32")])
  })
})

describe("the agent shapes what GET /v1/node/peers says [D103]", () => {
  let app: TestApp
  beforeAll(async () => {
    app = await makeTestApp()
  })
  afterAll(() => app.dispose())

  test("a 10 Mbps plan's peer gets a 10mbit class, an unlimited one none; the admin's 5 Mbps reaches tc on the next poll", async () => {
    const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
    const made = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Ten", speed_limit_mbps: 10 } }))
    const cycle10 = await ok(
      staff.catalogAdmin.createCycle({ path: { plan: made.id }, payload: { name: "Monthly", duration_days: 30, price: 500, currency: "USD" } })
    )
    const limited = { planId: made.id, cycleId: cycle10.id }
    const open = await ok(staff.catalogAdmin.createPlan({ payload: { name: "Open" } }))
    const cycleOpen = await ok(
      staff.catalogAdmin.createCycle({ path: { plan: open.id }, payload: { name: "Monthly", duration_days: 30, price: 500, currency: "USD" } })
    )
    const server = await makeServer(app, { planIds: [limited.planId, open.id] })
    const join = async (p: { planId: number; cycleId: number }) => {
      const user = await app.createUser()
      await makeService(app, user.id, p)
      const me = await typedClient(app, { token: user.token })
      const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
      return { key: KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!), address: /^Address = (.+)$/m.exec(conf)![1]! }
    }
    const slow = await join(limited)
    await join({ planId: open.id, cycleId: cycleOpen.id })

    const r = recorder()
    const iface = fakeInterface()
    const layer = Layer.mergeAll(iface.layer, nodeClientLayer(server.nodeToken, appFetch(app).fetchImpl))
    const shaper = await Effect.runPromise(makeShaper("wg0").pipe(Effect.provide(Layer.succeed(Tc, makeTc(r.run)))))
    const state = Effect.runSync(Ref.make<AgentState>(initialState))
    const once = () => Effect.runPromise(quiet(cycle({ iface: "wg0", pollSeconds: 10, shaper }, state, Effect.succeed("k")).pipe(Effect.provide(layer))))

    await once()
    expect(iface.peers.size).toBe(2)
    expect(r.take()).toEqual([...RESET_WG0, ...classOf("1", 2, 10, slow.address)])
    await once()
    expect(r.take()).toEqual([])
    expect((await ok(staff.catalogAdmin.updatePlan({ path: { plan: limited.planId }, payload: { speed_limit_mbps: 5 } }))).speed_limit_mbps).toBe(5)
    await once()
    expect(r.take()).toEqual([
      "tc class replace dev wg0 parent 1: classid 1:1 htb rate 5mbit ceil 5mbit",
      "tc class replace dev ifbwg0 parent 1: classid 1:1 htb rate 5mbit ceil 5mbit"
    ])
  })
})
