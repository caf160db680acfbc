import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseCredentialsFile } from "../../src/node/OpenVpnAuth.ts"
import { recalledSpeed, sessionOf } from "../../src/node/OpenVpnShaping.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { vpnMember } from "../vpn/fixtures.ts"
import { appFetch } from "./fakes.ts"

// [D93]: `vpn-api node-agent openvpn-auth <file>`, OpenVPN's `auth-user-pass-verify ... via-file`
// script, run as a process against the real API (served in process on a local port).
let app: TestApp
let server: ReturnType<typeof Bun.serve>
const dir = mkdtempSync(join(tmpdir(), "vpn-ovpn-auth-"))
beforeAll(async () => {
  app = await makeTestApp()
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: appFetch(app).fetchImpl })
})
afterAll(async () => {
  await server.stop(true)
  await app.dispose()
  rmSync(dir, { recursive: true, force: true })
})

/** the client's real address as OpenVPN gives it to auth-user-pass-verify */
const CLIENT = { untrusted_ip: "203.0.113.7", untrusted_port: "50123" }

let files = 0
const credentialsFile = (text: string) => {
  const file = join(dir, `creds-${++files}`)
  writeFileSync(file, text, { mode: 0o600 })
  return file
}

const script = async (file: string, env: Record<string, string>) => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("NODE_")) base[k] = v
  const proc = Bun.spawn([process.execPath, "run", "src/cli.ts", "node-agent", "openvpn-auth", file], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...base, ...env },
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: stdout + stderr }
}

describe("vpn-api node-agent openvpn-auth <file> [D93]", () => {
  test("exit 0 when the API allows the file's credentials; 1 for a wrong password, an unreadable file or an API away", async () => {
    const m = await vpnMember(app)
    // what OpenVPN sets for auth-user-pass-verify: the client's address and port (issue 34)
    const env = { NODE_API_URL: `http://127.0.0.1:${server.port}`, NODE_TOKEN: m.ovpn.nodeToken, OPENVPN_STATE_DIR: join(dir, "state-1"), ...CLIENT }

    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), env)).code).toBe(0)
    const wrong = await script(credentialsFile(`${m.username}\nnot-the-secret\n`), env)
    expect(wrong.code).toBe(1)
    // the secret is never printed
    expect(wrong.output).not.toContain(m.secret)
    expect((await script(join(dir, "missing"), env)).code).toBe(1)
    expect((await script(credentialsFile(`${m.username}\n`), env)).code).toBe(1)
    // not a node token: 401, refused
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), { ...env, NODE_TOKEN: "not-a-node-token" })).code).toBe(1)
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), { ...env, NODE_API_URL: "http://127.0.0.1:9" })).code).toBe(1)
    // a disabled user is refused by the same check ([D91])
    const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
    expect((await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { status: 0 } }))).status).toBe(0)
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), env)).code).toBe(1)
  }, 60_000)

  test("an allowed session leaves its speed in OPENVPN_STATE_DIR for openvpn-connect [D103]", async () => {
    const m = await vpnMember(app)
    const [row] = await app.sql<{ plan_id: number }>`select plan_id from services where user_id = ${m.user.id}`
    const staff = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
    expect((await ok(staff.catalogAdmin.updatePlan({ path: { plan: row!.plan_id }, payload: { speed_limit_mbps: 12 } }))).speed_limit_mbps).toBe(12)
    const stateDir = join(dir, "state")
    const env = { NODE_API_URL: `http://127.0.0.1:${server.port}`, NODE_TOKEN: m.ovpn.nodeToken, OPENVPN_STATE_DIR: stateDir, ...CLIENT }
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), env)).code).toBe(0)
    // issue 34: kept for this session (the client's address and port), as client-connect finds it
    const session = sessionOf({
      dev: "tun0",
      ifconfig_pool_remote_ip: "10.8.0.6",
      username: m.username,
      trusted_ip: CLIENT.untrusted_ip,
      trusted_port: CLIENT.untrusted_port
    })!
    expect(await Effect.runPromise(recalledSpeed(stateDir, { username: m.username, client: session.client! }))).toBe(12)
    expect(await Effect.runPromise(Effect.either(recalledSpeed(stateDir, { username: m.username, client: "198.51.100.9 40000" })))).toMatchObject({
      _tag: "Left"
    })
    // the file holds the speed only, named by a hash: no username, no secret
    for (const name of readdirSync(stateDir)) {
      expect(name).not.toContain(m.username)
      expect(readFileSync(join(stateDir, name), "utf8")).toBe("12\n")
    }
    // issue 34, fail closed: a session whose speed cannot be kept is refused, and one OpenVPN did not name
    const blocked = credentialsFile("not a directory")
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), { ...env, OPENVPN_STATE_DIR: join(blocked, "state") })).code).toBe(1)
    const { untrusted_ip: _, ...withoutAddress } = env
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), withoutAddress)).code).toBe(1)
  }, 60_000)

  test("the file: username and password on two lines, CRLF too", () => {
    expect(parseCredentialsFile("alice\ns3cret\n")).toEqual({ username: "alice", password: "s3cret" })
    expect(parseCredentialsFile("alice\r\ns3cret\r\n")).toEqual({ username: "alice", password: "s3cret" })
    expect(parseCredentialsFile("alice")).toBeUndefined()
    expect(parseCredentialsFile("\npassword\n")).toBeUndefined()
  })
})
