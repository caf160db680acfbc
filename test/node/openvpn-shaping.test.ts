import { afterAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { classIdOfAddress, openvpnConnect, openvpnDisconnect, rememberSpeed, sessionOf } from "../../src/node/OpenVpnShaping.ts"
import { type CommandRunner, make as makeTc, Tc } from "../../src/node/Tc.ts"

// [D103] for OpenVPN: the client-connect / client-disconnect scripts, checked by the tc commands
// they issue (a recording runner stands in for tc; scripts/check-tunnel.sh runs them for real).
const dir = mkdtempSync(join(tmpdir(), "vpn-ovpn-shaping-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const recorder = (qdiscs = "") => {
  const calls: Array<string> = []
  const run: CommandRunner = (argv) =>
    Effect.sync(() => {
      calls.push(argv.join(" "))
      return argv.includes("show") ? qdiscs : ""
    })
  return { calls, layer: Layer.succeed(Tc, makeTc(run)) }
}
const ROOTS = "qdisc htb 1: root refcnt 2 r2q 10 default 0\nqdisc ingress ffff: parent ffff:fff1 ----------------\n"

describe("openvpn-connect / openvpn-disconnect [D103]", () => {
  test("the session's address gets a class at the speed openvpn-auth left; the roots are made once", async () => {
    await Effect.runPromise(rememberSpeed(dir, "u1-alice", 10))
    const session = sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.6", username: "u1-alice" })!
    const fresh = recorder()
    expect(await Effect.runPromise(openvpnConnect(session, dir).pipe(Effect.provide(fresh.layer)))).toBe(10)
    expect(fresh.calls).toContain("tc qdisc add dev tun0 root handle 1: htb default 0")
    expect(fresh.calls).toContain("tc filter add dev tun0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev ifbtun0")
    expect(fresh.calls).toContain("tc class replace dev tun0 parent 1: classid 1:6 htb rate 10mbit ceil 10mbit")
    expect(fresh.calls).toContain("tc filter add dev tun0 parent 1: protocol ip prio 12 u32 match ip dst 10.8.0.6/32 flowid 1:6")
    expect(fresh.calls).toContain("tc filter add dev ifbtun0 parent 1: protocol ip prio 12 u32 match ip src 10.8.0.6/32 flowid 1:6")

    // a second session: the roots are there, not made again
    const next = recorder(ROOTS)
    await Effect.runPromise(openvpnConnect({ ...session, address: "10.8.1.2" }, dir).pipe(Effect.provide(next.layer)))
    expect(next.calls.some((c) => c.includes("qdisc add") || c.includes("qdisc del"))).toBe(false)
    expect(next.calls).toContain("tc class replace dev tun0 parent 1: classid 1:102 htb rate 10mbit ceil 10mbit")

    const gone = recorder(ROOTS)
    await Effect.runPromise(openvpnDisconnect(session, dir).pipe(Effect.provide(gone.layer)))
    expect(gone.calls).toEqual([
      "tc filter del dev tun0 parent 1: prio 12",
      "tc filter del dev tun0 parent 1: prio 13",
      "tc class del dev tun0 classid 1:6",
      "tc filter del dev ifbtun0 parent 1: prio 12",
      "tc filter del dev ifbtun0 parent 1: prio 13",
      "tc class del dev ifbtun0 classid 1:6"
    ])
  })

  test("no limit (or no speed left by openvpn-auth): not shaped, a stale class of the address removed", async () => {
    await Effect.runPromise(rememberSpeed(dir, "u2-bob", null))
    for (const username of ["u2-bob", "u3-never-authenticated"]) {
      const r = recorder(ROOTS)
      const speed = await Effect.runPromise(openvpnConnect({ dev: "tun0", address: "10.8.0.7", username }, dir).pipe(Effect.provide(r.layer)))
      expect(speed).toBeNull()
      expect(r.calls.some((c) => c.includes("class replace") || c.includes("filter add"))).toBe(false)
      expect(r.calls).toContain("tc class del dev tun0 classid 1:7")
    }
  })

  test("class ids from addresses; the environment OpenVPN gives", () => {
    expect(classIdOfAddress("10.8.0.6")).toBe(6)
    expect(classIdOfAddress("10.8.1.2")).toBe(258)
    expect(classIdOfAddress("10.8.128.0")).toBe(32_767)
    expect(classIdOfAddress("10.8.0.300")).toBeUndefined()
    expect(classIdOfAddress("fd00::2")).toBeUndefined()
    expect(sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.6", common_name: "u1" })).toEqual({ dev: "tun0", address: "10.8.0.6", username: "u1" })
    expect(sessionOf({ dev: "tun0; reboot", ifconfig_pool_remote_ip: "10.8.0.6", username: "u1" })).toBeUndefined()
    expect(sessionOf({ dev: "tun0", username: "u1" })).toBeUndefined()
  })
})
