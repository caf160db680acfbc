import { afterAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { classIdOfAddress, openvpnConnect, openvpnDisconnect, rememberSpeed, sessionKeyOf, sessionOf } from "../../src/node/OpenVpnShaping.ts"
import { type CommandRunner, make as makeTc, Tc, TcFailed } from "../../src/node/Tc.ts"

// [D103] for OpenVPN: the client-connect / client-disconnect scripts, checked by the tc commands
// they issue (a recording runner stands in for tc; scripts/check-tunnel.sh runs them for real).
const dir = mkdtempSync(join(tmpdir(), "vpn-ovpn-shaping-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const recorder = (qdiscs = "", fails?: RegExp) => {
  const calls: Array<string> = []
  const run: CommandRunner = (argv) =>
    Effect.suspend(() => {
      calls.push(argv.join(" "))
      if (fails?.test(argv.join(" "))) return Effect.fail(new TcFailed({ command: argv.join(" "), message: "RTNETLINK answers: Operation not permitted" }))
      return Effect.succeed(argv.includes("show") ? qdiscs : "")
    })
  return { calls, layer: Layer.succeed(Tc, makeTc(run)) }
}

/** what OpenVPN gives a session's scripts: auth sees `untrusted_*`, connect and disconnect `trusted_*` */
const client = (ip: string, port: number) => ({ trusted_ip: ip, trusted_port: String(port) })
const authKey = (username: string, ip: string, port: number) => sessionKeyOf({ untrusted_ip: ip, untrusted_port: String(port) }, "auth", username)!
const ROOTS = "qdisc htb 1: root refcnt 2 r2q 10 default 0\nqdisc ingress ffff: parent ffff:fff1 ----------------\n"

describe("openvpn-connect / openvpn-disconnect [D103]", () => {
  test("the session's address gets a class at the speed openvpn-auth left; the roots are made once", async () => {
    await Effect.runPromise(rememberSpeed(dir, authKey("u1-alice", "203.0.113.5", 40001), 10))
    await Effect.runPromise(rememberSpeed(dir, authKey("u1-alice", "203.0.113.5", 40002), 10))
    const session = sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.6", username: "u1-alice", ...client("203.0.113.5", 40001) })!
    const fresh = recorder()
    expect(await Effect.runPromise(openvpnConnect(session, dir).pipe(Effect.provide(fresh.layer)))).toBe(10)
    expect(fresh.calls).toContain("tc qdisc add dev tun0 root handle 1: htb default 0")
    expect(fresh.calls).toContain("tc filter add dev tun0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev ifbtun0")
    expect(fresh.calls).toContain("tc class replace dev tun0 parent 1: classid 1:6 htb rate 10mbit ceil 10mbit")
    expect(fresh.calls).toContain("tc filter add dev tun0 parent 1: protocol ip prio 12 u32 match ip dst 10.8.0.6/32 flowid 1:6")
    expect(fresh.calls).toContain("tc filter add dev ifbtun0 parent 1: protocol ip prio 12 u32 match ip src 10.8.0.6/32 flowid 1:6")

    // a second session: the roots are there, not made again
    const next = recorder(ROOTS)
    await Effect.runPromise(openvpnConnect({ ...session, address: "10.8.1.2", client: "203.0.113.5 40002" }, dir).pipe(Effect.provide(next.layer)))
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

  test("no limit: not shaped, a stale class of the address removed", async () => {
    await Effect.runPromise(rememberSpeed(dir, authKey("u2-bob", "203.0.113.6", 40000), null))
    const r = recorder(ROOTS)
    const speed = await Effect.runPromise(
      openvpnConnect({ dev: "tun0", address: "10.8.0.7", username: "u2-bob", client: "203.0.113.6 40000" }, dir).pipe(Effect.provide(r.layer))
    )
    expect(speed).toBeNull()
    expect(r.calls.some((c) => c.includes("class replace") || c.includes("filter add"))).toBe(false)
    expect(r.calls).toContain("tc class del dev tun0 classid 1:7")
  })

  test("issue 34: the same credentials connected twice: the replaced session's disconnect leaves the new session's speed", async () => {
    // OpenVPN: the second client authenticates, the first session is dropped (its client-disconnect
    // runs), then the second's client-connect. Each session's speed is its own.
    await Effect.runPromise(rememberSpeed(dir, authKey("u4-carol", "198.51.100.20", 51000), 10))
    const first = sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.20", username: "u4-carol", ...client("198.51.100.20", 51000) })!
    await Effect.runPromise(openvpnConnect(first, dir).pipe(Effect.provide(recorder(ROOTS).layer)))

    await Effect.runPromise(rememberSpeed(dir, authKey("u4-carol", "198.51.100.21", 52000), 10))
    await Effect.runPromise(openvpnDisconnect(first, dir).pipe(Effect.provide(recorder(ROOTS).layer)))
    const second = sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.21", username: "u4-carol", ...client("198.51.100.21", 52000) })!
    const r = recorder(ROOTS)
    expect(await Effect.runPromise(openvpnConnect(second, dir).pipe(Effect.provide(r.layer)))).toBe(10)
    expect(r.calls).toContain("tc class replace dev tun0 parent 1: classid 1:15 htb rate 10mbit ceil 10mbit")
    // the first session's speed is gone with it: connecting as it again is refused
    const again = await Effect.runPromise(Effect.either(openvpnConnect(first, dir).pipe(Effect.provide(recorder(ROOTS).layer))))
    expect(again._tag).toBe("Left")
  })

  test("issue 34, fail closed: no speed left for the session, no client address, or tc failing for a limit: refused", async () => {
    const refused = async (session: Parameters<typeof openvpnConnect>[0], fails?: RegExp) => {
      const r = recorder(ROOTS, fails)
      const outcome = await Effect.runPromise(Effect.either(openvpnConnect(session, dir).pipe(Effect.provide(r.layer))))
      expect(outcome._tag).toBe("Left")
      expect(r.calls.some((c) => c.includes("class replace"))).toBe(fails !== undefined)
    }
    await refused({ dev: "tun0", address: "10.8.0.30", username: "u5-never-authenticated", client: "198.51.100.30 53000" })
    await refused({ dev: "tun0", address: "10.8.0.31", username: "u4-carol" })
    await Effect.runPromise(rememberSpeed(dir, authKey("u6-dave", "198.51.100.32", 54000), 10))
    await refused({ dev: "tun0", address: "10.8.0.32", username: "u6-dave", client: "198.51.100.32 54000" }, /filter add dev tun0/)
    // with no limit a failing tc is no bypass: the session connects
    await Effect.runPromise(rememberSpeed(dir, authKey("u7-erin", "198.51.100.33", 55000), null))
    const r = recorder(ROOTS, /tc/)
    expect(
      await Effect.runPromise(
        openvpnConnect({ dev: "tun0", address: "10.8.0.33", username: "u7-erin", client: "198.51.100.33 55000" }, dir).pipe(Effect.provide(r.layer))
      )
    ).toBeNull()
  })

  test("class ids from addresses; the environment OpenVPN gives", () => {
    expect(classIdOfAddress("10.8.0.6")).toBe(6)
    expect(classIdOfAddress("10.8.1.2")).toBe(258)
    expect(classIdOfAddress("10.8.128.0")).toBe(32_767)
    expect(classIdOfAddress("10.8.0.300")).toBeUndefined()
    expect(classIdOfAddress("fd00::2")).toBeUndefined()
    expect(sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.6", common_name: "u1" })).toEqual({ dev: "tun0", address: "10.8.0.6", username: "u1" })
    expect(sessionOf({ dev: "tun0", ifconfig_pool_remote_ip: "10.8.0.6", username: "u1", trusted_ip6: "2001:db8::5", trusted_port: "1194" })).toEqual({
      dev: "tun0",
      address: "10.8.0.6",
      username: "u1",
      client: "2001:db8::5 1194"
    })
    // the session OpenVPN authenticated is the session it connects: the same key
    expect(sessionKeyOf({ untrusted_ip: "203.0.113.5", untrusted_port: "40001" }, "auth", "u1")).toEqual({ username: "u1", client: "203.0.113.5 40001" })
    expect(sessionKeyOf({ untrusted_ip: "203.0.113.5" }, "auth", "u1")).toBeUndefined()
    expect(sessionOf({ dev: "tun0; reboot", ifconfig_pool_remote_ip: "10.8.0.6", username: "u1" })).toBeUndefined()
    expect(sessionOf({ dev: "tun0", username: "u1" })).toBeUndefined()
  })
})
