/**
 * [D126], issue 41: "a device deleted reaches a connected node agent's stream" after a failover.
 * The real `vpn-api node-agent` (src/cli.ts) runs beside the two API instances, connected to
 * instance B's push stream ([D105], /v1/node/rpc); devices are created and deleted through
 * instance A, so the removal reaches B only through PostgreSQL (B's `LISTEN` on the node change
 * log, src/vpn/PeerWake.ts). There is no WireGuard interface here: a stand-in `wg` first on the
 * agent's PATH keeps the interface's peers in a file, taking the same arguments as
 * wireguard-tools' (`wg show <if> dump`, `wg set <if> peer <key> remove|allowed-ips <ips>`); the
 * run reads that file to see when a peer left. The agent polls once an hour (NODE_POLL_SECONDS),
 * so a change arriving within seconds came through the push stream.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { call, type RunningServer, strongPassword } from "../../test/instances/harness.ts"

/**
 * the longest a deleted device may take to leave the agent's interface after a failover; under
 * PeerWake's 5 s safety read, so a `LISTEN` that is dead while believed subscribed fails it
 */
export const REMOVAL_BOUND_MS = 2000
const ROOT = resolve(import.meta.dir, "../..")

/** wireguard-tools' `wg`, as far as the node agent uses it, on a file (a stand-in: no interface here) */
const FAKE_WG = String.raw`#!/bin/bash
# A stand-in for wireguard-tools' wg (scripts/failover/agent.ts): the node agent's interface kept
# in the file "peers" beside this script, one "<public key> <allowed ips>" a line.
set -eu
state="$(dirname "$0")/peers"
touch "$state"
if [ "$1" = show ] && [ "$3" = dump ]; then
  printf 'PRIVATE=\tOWN=\t51820\toff\n'
  while read -r key ips; do printf '%s\t(none)\t(none)\t%s\t0\t0\t0\toff\n' "$key" "$ips"; done <"$state"
  exit 0
fi
if [ "$1" = set ] && [ "$3" = peer ]; then
  awk -v k="$4" '$1 != k' "$state" >"$state.tmp"
  case "$5" in
    remove) ;;
    allowed-ips) printf '%s %s\n' "$4" "$6" >>"$state.tmp" ;;
    *) echo "fake wg: unexpected: $*" >&2; exit 1 ;;
  esac
  mv "$state.tmp" "$state"
  exit 0
fi
echo "fake wg: unexpected: $*" >&2
exit 1
`

interface Options {
  readonly dir: string
  /** devices are made and deleted through this instance */
  readonly writer: RunningServer
  /** the agent's stream is on this one */
  readonly streamer: RunningServer
  readonly adminToken: string
  readonly plan: { readonly id: number; readonly cycle: number }
  readonly log: (line: string) => void
  readonly problems: Array<string>
}

const until = async (what: string, cond: () => Promise<boolean>, timeoutMs: number, stepMs = 10) => {
  const start = performance.now()
  while (!(await cond())) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await Bun.sleep(stepMs)
  }
  return performance.now() - start
}

/** a request retried while the API answers 503 or nothing (right after a failover) */
const settled = async (what: string, run: () => ReturnType<typeof call>, ok: ReadonlyArray<number>) => {
  let last = ""
  for (let attempt = 0; attempt < 40; attempt++) {
    try {
      const reply = await run()
      if (ok.includes(reply.status)) return reply
      last = `${reply.status} ${reply.text.slice(0, 200)}`
      if (reply.status !== 503) break
    } catch (e) {
      last = String(e)
    }
    await Bun.sleep(250)
  }
  throw new Error(`${what}: ${last}`)
}

export const startNodeAgent = async (options: Options) => {
  const { adminToken, dir, log, plan, problems, streamer, writer } = options
  const headers = { "x-forwarded-for": `10.78.0.${1 + (process.pid % 250)}` }
  const ok = async (what: string, method: string, base: string, path: string, body: unknown, token: string, codes = [200, 201]) => {
    const reply = await settled(what, () => call(base, method, path, { token, headers, ...(body === undefined ? {} : { body }) }), codes)
    return reply
  }

  // a WireGuard server on the plan, and a subscriber of the plan
  const server = await ok(
    "server",
    "POST",
    writer.base,
    "/v1/admin/servers",
    {
      name: "Failover node",
      country: "NL",
      city: "Lab",
      protocol: "wireguard",
      ip: "10.241.0.1",
      port: 51820,
      subnet: "10.67.0.0/16",
      plan_ids: [plan.id]
    },
    adminToken
  )
  const serverId = server.body.data.id as number
  const nodeToken = server.body.data.node_token as string
  const email = `failover.agent.${Date.now().toString(36)}@example.test`
  const password = strongPassword()
  const registered = await settled(
    "register",
    () =>
      call(writer.base, "POST", "/v1/auth/register", {
        headers,
        body: { name: "Failover Agent", email, password, password_confirmation: password }
      }),
    [201]
  )
  const token = registered.body.data.token as string
  const order = await ok("order", "POST", writer.base, "/v1/orders", { plan_id: plan.id, cycle_id: plan.cycle }, token)
  await ok("mark paid", "POST", writer.base, `/v1/admin/invoices/${order.body.data.uuid}/mark-paid`, undefined, adminToken)

  // the agent, with the stand-in `wg` first on its PATH
  const bin = join(dir, "fake-wg")
  mkdirSync(bin)
  writeFileSync(join(bin, "wg"), FAKE_WG)
  chmodSync(join(bin, "wg"), 0o755)
  const peersFile = Bun.file(join(bin, "peers"))
  const logFile = join(dir, "agent.log")
  const agent = Bun.spawn([process.execPath, "run", "src/cli.ts", "node-agent"], {
    cwd: ROOT,
    env: {
      PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}`,
      HOME: process.env["HOME"] ?? "/tmp",
      NODE_API_URL: streamer.base,
      NODE_TOKEN: nodeToken,
      WG_INTERFACE: "wgfail0",
      NODE_POLL_SECONDS: "3600",
      NODE_REPORT_SECONDS: "3600",
      NODE_SHAPING: "false"
    },
    stdout: Bun.file(logFile),
    stderr: Bun.file(logFile)
  })
  const agentLog = () =>
    Bun.file(logFile)
      .text()
      .catch(() => "")
  try {
    await until("the node agent's push stream", async () => (await agentLog()).includes("push stream up"), 30_000, 100)
  } catch (e) {
    agent.kill("SIGKILL")
    await agent.exited
    throw new Error(`${(e as Error).message}:\n${(await agentLog()).slice(-2000)}`)
  }

  const peers = async () => {
    const text = await peersFile.text().catch(() => "")
    return new Set(
      text
        .split("\n")
        .filter((l) => l.length > 0)
        .map((l) => l.split(" ")[0]!)
    )
  }

  /** a device made and downloaded through A reaches the agent; deleted through A, it leaves within the bound */
  const removalReaches = async (name: string) => {
    try {
      const device = await ok(`${name}: device`, "POST", writer.base, "/v1/devices", { name: `after ${name}`.slice(0, 40), platform: "linux" }, token)
      const id = device.body.data.id as number
      const conf = await ok(`${name}: config`, "GET", writer.base, `/v1/devices/${id}/wireguard/${serverId}`, undefined, token)
      const key = KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf.text)![1]!)
      const addedMs = await until(`${name}: the new device on the agent's interface`, async () => (await peers()).has(key), 10_000)
      // a DELETE answered 503 may have committed: its retry then finds no device (404)
      await settled(`${name}: delete`, () => call(writer.base, "DELETE", `/v1/devices/${id}`, { token, headers }), [200, 404])
      const removedMs = await until(`${name}: the deleted device off the agent's interface`, async () => !(await peers()).has(key), REMOVAL_BOUND_MS)
      log(`${name}: a device made through A reached the agent on B's stream in ${addedMs.toFixed(0)} ms; deleted, it left in ${removedMs.toFixed(0)} ms`)
    } catch (e) {
      problems.push(`node agent: ${(e as Error).message}`)
    }
  }

  return {
    removalReaches,
    stop: async () => {
      const early = agent.exitCode !== null
      if (!early) agent.kill("SIGTERM")
      const stopped = await Promise.race([agent.exited.then(() => true), Bun.sleep(5000).then(() => false)])
      if (!stopped) {
        agent.kill("SIGKILL")
        await agent.exited
      }
      const text = await agentLog()
      log(`node agent: its push stream was cut ${text.split("\n").filter((l) => l.includes("push stream down")).length} time(s) in the run`)
      if (early) problems.push(`the node agent exited by itself (${agent.exitCode}):\n${text.slice(-2000)}`)
    }
  }
}
