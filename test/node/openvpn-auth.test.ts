import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseCredentialsFile } from "../../src/node/OpenVpnAuth.ts"
import { recalledSpeed } from "../../src/node/OpenVpnShaping.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
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
    const env = { NODE_API_URL: `http://127.0.0.1:${server.port}`, NODE_TOKEN: m.ovpn.nodeToken }

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
    const admin = await app.createUser({ role: "admin" })
    await app.put(`/v1/admin/users/${m.user.id}`, { token: admin.token, body: { status: 0 } })
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), env)).code).toBe(1)
  }, 60_000)

  test("an allowed session leaves its speed in OPENVPN_STATE_DIR for openvpn-connect [D103]", async () => {
    const m = await vpnMember(app)
    const [row] = await app.sql<{ plan_id: number }>`select plan_id from services where user_id = ${m.user.id}`
    const admin = await app.createUser({ role: "admin" })
    expect((await app.put(`/v1/admin/plans/${row!.plan_id}`, { token: admin.token, body: { speed_limit_mbps: 12 } })).status).toBe(200)
    const stateDir = join(dir, "state")
    const env = { NODE_API_URL: `http://127.0.0.1:${server.port}`, NODE_TOKEN: m.ovpn.nodeToken, OPENVPN_STATE_DIR: stateDir }
    expect((await script(credentialsFile(`${m.username}\n${m.secret}\n`), env)).code).toBe(0)
    expect(await Effect.runPromise(recalledSpeed(stateDir, m.username))).toBe(12)
    // the file holds the speed only, named by a hash: no username, no secret
    for (const name of readdirSync(stateDir)) {
      expect(name).not.toContain(m.username)
      expect(readFileSync(join(stateDir, name), "utf8")).toBe("12\n")
    }
  }, 60_000)

  test("the file: username and password on two lines, CRLF too", () => {
    expect(parseCredentialsFile("alice\ns3cret\n")).toEqual({ username: "alice", password: "s3cret" })
    expect(parseCredentialsFile("alice\r\ns3cret\r\n")).toEqual({ username: "alice", password: "s3cret" })
    expect(parseCredentialsFile("alice")).toBeUndefined()
    expect(parseCredentialsFile("\npassword\n")).toBeUndefined()
  })
})
