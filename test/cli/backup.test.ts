import { afterAll, describe, expect, test } from "bun:test"
import { Effect, Exit, Scope } from "effect"
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEMO_USER } from "../../src/demo/SeedDemo.ts"
import { embeddedServer } from "../../src/platform/Database.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"

// `backup` and `restore` of the embedded database [D2] rev. 2, run as the admin CLI's processes:
// a seeded DATA_DIR goes into one file with its application key and comes back whole in a fresh one.
const root = mkdtempSync(join(tmpdir(), "vpn-bak-"))
const original = join(root, "a")
const restored = join(root, "b")
const file = join(root, "vpn.backup")

const cli = async (dataDir: string, args: ReadonlyArray<string>, extra: Record<string, string> = {}) => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && k !== "DATABASE_URL" && k !== "APP_KEY") env[k] = v
  }
  const proc = Bun.spawn([process.execPath, "run", "src/cli.ts", ...args], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...env, DATA_DIR: dataDir, LOG_LEVEL: "warning", ...extra },
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { stdout, stderr, code }
}

const driver = process.env["DB_DRIVER"] === "pg" ? "pg" : "bun"
const keyOf = (dataDir: string) => new Uint8Array(Buffer.from(readFileSync(join(dataDir, "app.key"), "utf8").trim(), "base64"))

/** The API on `dataDir` as the server opens it (PGlite on the Unix socket in it), with its own application key. */
const open = async (dataDir: string) => {
  const scope = Effect.runSync(Scope.make())
  const { url } = await Effect.runPromise(Scope.extend(embeddedServer(dataDir, driver), scope))
  const app = await makeTestApp({ database: { url, embedded: true }, reset: false, appKey: keyOf(dataDir) })
  return {
    app,
    close: async () => {
      await app.dispose()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  }
}

let opened: { app: TestApp; close: () => Promise<void> } | undefined
afterAll(async () => {
  await opened?.close().catch(() => {})
  rmSync(root, { recursive: true, force: true })
})

/** What the demo user downloads (a first WireGuard download makes the peer), and every row the restore must bring back. */
const snapshot = async (app: TestApp) => {
  // the demo data is dated from the real clock
  app.clock.set(new Date())
  const login = await app.post("/v1/auth/login", { body: { email: DEMO_USER.email, password: DEMO_USER.password } })
  expect(login.status).toBe(200)
  const token: string = login.body.data.token
  const [server] = await app.sql<{ id: number }>`select id from servers where name = 'Amsterdam 1'`
  const wireguard = await app.get(`/v1/servers/${server!.id}/wireguard`, { token })
  expect(wireguard.status).toBe(200)
  const credentials = await app.get("/v1/account/vpn-credentials", { token })
  expect(credentials.status).toBe(200)
  const users = await app.sql<{ email: string; password_hash: string }>`select email, password_hash from users order by id`
  const invoices = await app.sql<{ uuid: string; status: string; amount: string }>`
    select uuid::text as uuid, status, amount::text as amount from invoices order by id`
  const peers = await app.sql<{ public_key: string; private_key_enc: string }>`
    select public_key, private_key_enc from wireguard_peers order by id`
  const servers = await app.sql<{ name: string }>`select name from servers order by id`
  return { users, invoices, peers, servers, wireguard: wireguard.text, credentials: credentials.body.data }
}

/** Every path under `dir` with its permission bits. */
const modes = (dir: string): Array<[string, number]> => {
  const out: Array<[string, number]> = [[dir, statSync(dir).mode & 0o777]]
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    const stat = lstatSync(path)
    if (stat.isDirectory()) out.push(...modes(path))
    else if (!stat.isSymbolicLink() && !stat.isSocket()) out.push([path, stat.mode & 0o777])
  }
  return out
}

describe("vpn-api backup / restore (embedded database) [D2] rev. 2", () => {
  test("a seeded DATA_DIR comes back whole in a fresh one, keys still decrypting; refusals are clear", async () => {
    const seeded = await cli(original, ["seed-demo"])
    expect(seeded.stderr).toBe("")
    expect(seeded.code).toBe(0)

    // the demo user downloads a WireGuard config: a peer whose private key is stored encrypted with DATA_DIR's key
    opened = await open(original)
    const before = await snapshot(opened.app)
    expect(before.users.length).toBe(2)
    expect(before.invoices.length).toBe(3)
    expect(before.peers.length).toBe(1)
    expect(before.peers[0]!.private_key_enc.startsWith("v1:")).toBe(true)
    expect(before.wireguard).toContain("PrivateKey = ")

    // while a server holds the database, neither command touches it
    const busy = await cli(original, ["backup", file])
    expect(busy.code).toBe(1)
    expect(busy.stderr).toContain(`a server is running on ${original}: stop it first`)
    expect(existsSync(file)).toBe(false)
    await opened.close()
    opened = undefined

    const backedUp = await cli(original, ["backup", file])
    expect(backedUp.stderr).toBe("")
    expect(backedUp.code).toBe(0)
    expect(backedUp.stdout).toContain(`backup written: ${file}`)
    expect(backedUp.stdout).toContain("keep it as secret as the key itself")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readFileSync(file).subarray(0, 17).toString()).toBe("vpn-api-backup 1\n")

    const first = await cli(restored, ["restore", file])
    expect(first.stderr).toBe("")
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`restored into ${restored}`)
    // [D2] rev. 2: the directory 0700, every file 0600; the key is the original's
    for (const [path, mode] of modes(restored)) {
      expect([path, mode]).toEqual([path, statSync(path).isDirectory() ? 0o700 : 0o600])
    }
    expect(keyOf(restored)).toEqual(keyOf(original))

    // a non-empty DATA_DIR is refused without --force, and left as it was
    const again = await cli(restored, ["restore", file])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain(`${restored} (DATA_DIR) is not empty: restore goes into a new or empty directory; --force replaces`)
    writeFileSync(join(restored, "app.key"), Buffer.alloc(32, 1).toString("base64"))
    const forced = await cli(restored, ["restore", "--force", file])
    expect(forced.stderr).toBe("")
    expect(forced.code).toBe(0)
    expect(keyOf(restored)).toEqual(keyOf(original))

    opened = await open(restored)
    const after = await snapshot(opened.app)
    expect(after.users).toEqual(before.users)
    expect(after.invoices).toEqual(before.invoices)
    expect(after.peers).toEqual(before.peers)
    expect(after.servers).toEqual(before.servers)
    // the same peer, its private key decrypted with the restored key: the same file again
    expect(after.wireguard).toBe(before.wireguard)
    expect(after.credentials).toEqual(before.credentials)
    await opened.close()
    opened = undefined
  }, 240_000)

  test("not a backup, a missing file, DATABASE_URL: exit 1 with one clear line", async () => {
    const junk = join(root, "junk.backup")
    writeFileSync(junk, "hello\n")
    const empty = join(root, "empty")
    mkdirSync(empty)
    const notOurs = await cli(empty, ["restore", junk])
    expect(notOurs.code).toBe(1)
    expect(notOurs.stderr).toContain(`${junk}: not a vpn-api backup`)
    expect(readdirSync(empty)).toEqual([])

    const missing = await cli(empty, ["restore", join(root, "nothing.backup")])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain(`cannot read ${join(root, "nothing.backup")}`)

    const nothingHere = await cli(empty, ["backup", join(root, "x.backup")])
    expect(nothingHere.code).toBe(1)
    expect(nothingHere.stderr).toContain(`no embedded database in ${empty} (DATA_DIR)`)

    const postgres = { DATABASE_URL: "postgres://vpn@127.0.0.1:1/vpn", APP_KEY: Buffer.alloc(32, 3).toString("base64") }
    const dump = await cli(empty, ["backup", join(root, "x.backup")], postgres)
    expect(dump.code).toBe(1)
    expect(dump.stderr).toContain("DATABASE_URL is set: this command is for the embedded database only. Back PostgreSQL up with pg_dump")
    const load = await cli(empty, ["restore", junk], postgres)
    expect(load.code).toBe(1)
    expect(load.stderr).toContain("Restore PostgreSQL with pg_restore")
  }, 60_000)
})
