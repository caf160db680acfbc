import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makePlan, makeServer, makeService } from "./fixtures.ts"

/**
 * [D52] [D53] with the real tools: `wg pubkey` on a downloaded private key, and
 * `openvpn --config` on a downloaded profile holding a CA made by `openssl`. CI installs them
 * (`apt-get install -y wireguard-tools openvpn`); where a tool is missing the check is skipped
 * with a message.
 */
let app: TestApp
let dir: string
beforeAll(async () => {
  app = await makeTestApp()
  dir = mkdtempSync(join(tmpdir(), "vpn-tools-"))
})
afterAll(async () => {
  await app.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const run = (cmd: Array<string>, options: { readonly stdin?: string; readonly timeoutMs?: number } = {}) => {
  const proc = Bun.spawnSync(cmd, {
    stdin: options.stdin !== undefined ? Buffer.from(options.stdin) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: options.timeoutMs ?? 10_000
  })
  return { code: proc.exitCode, out: `${proc.stdout.toString()}${proc.stderr.toString()}` }
}

describe("real tools", () => {
  // needs `wg` (apt-get install -y wireguard-tools; .ci/run installs it): skipped, not passed, without it
  test.skipIf(!Bun.which("wg"))("wg pubkey of the downloaded PrivateKey is the stored peer public key [D52]", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeService(app, user.id, plan)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const me = await typedClient(app, { token: user.token })
    const conf = await ok(me.vpn.wireguard({ path: { server: server.id } }))
    const privateKey = /^PrivateKey = (\S+)$/m.exec(conf)![1]!
    const wg = run(["wg", "pubkey"], { stdin: `${privateKey}\n` })
    expect(wg.code).toBe(0)
    const [peer] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where user_id = ${user.id}`
    expect(wg.out.trim()).toBe(peer!.public_key)
    if (Bun.which("wg-quick")) {
      const file = join(dir, "wg0.conf")
      writeFileSync(file, conf, { mode: 0o600 })
      const strip = run(["wg-quick", "strip", file])
      if (strip.code === 0) expect(strip.out).toContain(`PrivateKey = ${privateKey}`)
      else console.log(`NOTE: wg-quick strip could not run here: ${strip.out.trim().slice(0, 200)}`)
    }
  })

  // needs `openvpn` and `openssl` (apt-get install -y openvpn openssl; .ci/run installs them): skipped without them
  test.skipIf(!Bun.which("openvpn") || !Bun.which("openssl"))(
    "openvpn --config parses the downloaded profile with a real CA [D53]",
    async () => {
      const key = join(dir, "ca.key")
      const cert = join(dir, "ca.pem")
      const made = run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test-ca", "-keyout", key, "-out", cert], {
        timeoutMs: 60_000
      })
      expect(made.code).toBe(0)
      const user = await app.createUser()
      const plan = await makePlan(app)
      await makeService(app, user.id, plan)
      const server = await makeServer(app, {
        protocol: "openvpn",
        planIds: [plan.planId],
        caCert: readFileSync(cert, "utf8"),
        ip: "127.0.0.1",
        transport: "udp"
      })
      const me = await typedClient(app, { token: user.token })
      const text = await ok(me.vpn.openvpn({ path: { server: server.id } }))
      const profile = join(dir, "client.ovpn")
      writeFileSync(profile, text)
      // a good profile still stops (no credentials to prompt for): look for parse errors only
      const ovpn = run(["openvpn", "--config", profile, "--connect-timeout", "1", "--connect-retry-max", "1"], { timeoutMs: 5_000 })
      expect(ovpn.out).not.toContain("Options error")
      // the check can fail: a broken profile is reported
      writeFileSync(profile, text.replace("dev tun", "dev-bogus tun"))
      const broken = run(["openvpn", "--config", profile], { timeoutMs: 5_000 })
      expect(broken.out).toContain("Options error")
    },
    90_000
  )
})
