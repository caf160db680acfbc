import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { mkdir, readFile, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { MAX_CLASS_ID, Tc } from "./Tc.ts"

/**
 * [D103] for OpenVPN: `vpn-api node-agent openvpn-connect` and `openvpn-disconnect` are the
 * server's `client-connect` and `client-disconnect` scripts. OpenVPN gives them the tun device
 * (`dev`), the client's tunnel address (`ifconfig_pool_remote_ip`) and its `username`, but no
 * password, so the speed comes from the `openvpn-auth` script that ran just before for the same
 * username: it leaves the speed the API answered in `OPENVPN_STATE_DIR` (a file named by the
 * username's SHA-256; it holds a number or `none`, never a secret). The session's address gets a
 * class on the tun device the way a WireGuard peer does (`Tc`), its id taken from the address.
 */
export class OpenVpnScriptFailed extends Data.TaggedError("OpenVpnScriptFailed")<{ readonly message: string }> {}

/** `OPENVPN_STATE_DIR` (default `/run/vpn-api-openvpn`): where openvpn-auth leaves each user's speed */
export const openvpnStateDir = Config.string("OPENVPN_STATE_DIR").pipe(Config.withDefault("/run/vpn-api-openvpn"))

const speedFileOf = (dir: string, username: string) => join(dir, `${createHash("sha256").update(username).digest("hex")}.speed`)

const failed = (e: unknown) => new OpenVpnScriptFailed({ message: e instanceof Error ? e.message : String(e) })

/** openvpn-auth: the speed of an allowed session, for the connect script that follows */
export const rememberSpeed = (dir: string, username: string, speed: number | null) =>
  Effect.tryPromise({
    try: async () => {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      await writeFile(speedFileOf(dir, username), speed === null ? "none\n" : `${speed}\n`, { mode: 0o600 })
    },
    catch: failed
  })

/** the speed openvpn-auth left for the username; none when it left nothing (then: not shaped) */
export const recalledSpeed = (dir: string, username: string) =>
  Effect.tryPromise({ try: () => readFile(speedFileOf(dir, username), "utf8"), catch: failed }).pipe(
    Effect.map((text) => /^\d+$/.test(text.trim()) ? Number(text.trim()) : null),
    Effect.orElseSucceed(() => null)
  )

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/

/** A session's class id, from its address's low 15 bits (unique within a pool up to a /17) */
export const classIdOfAddress = (address: string): number | undefined => {
  const m = IPV4.exec(address)
  if (m === null || m.slice(1).some((o) => Number(o) > 255)) return undefined
  const low = ((Number(m[3]) << 8) | Number(m[4])) & MAX_CLASS_ID
  return low === 0 ? MAX_CLASS_ID : low
}

/** What OpenVPN tells its client-connect and client-disconnect scripts, from their environment. */
export interface SessionEnv {
  readonly dev: string
  readonly address: string
  readonly username: string
}

export const sessionOf = (env: Record<string, string | undefined>): SessionEnv | undefined => {
  const dev = env["dev"]
  const address = env["ifconfig_pool_remote_ip"]
  const username = env["username"] ?? env["common_name"]
  if (dev === undefined || !/^[A-Za-z0-9_.-]{1,15}$/.test(dev) || address === undefined || username === undefined) return undefined
  return { dev, address, username }
}

/** client-connect: the session's address shaped at the user's speed (or left unshaped) */
export const openvpnConnect = (session: SessionEnv, dir: string) =>
  Effect.gen(function*() {
    const tc = yield* Tc
    const id = classIdOfAddress(session.address)
    if (id === undefined) return yield* Effect.fail(new OpenVpnScriptFailed({ message: `not an IPv4 address: ${session.address}` }))
    const speed = yield* recalledSpeed(dir, session.username)
    yield* tc.ensure(session.dev)
    // a class left by an earlier session of this address goes either way
    if (speed === null) yield* tc.removeClass(session.dev, id)
    else yield* tc.setClass(session.dev, id, speed, [`${session.address}/32`])
    return speed
  })

/** client-disconnect: the session's class removed, and the speed the auth script left */
export const openvpnDisconnect = (session: SessionEnv, dir: string) =>
  Effect.gen(function*() {
    const tc = yield* Tc
    const id = classIdOfAddress(session.address)
    if (id !== undefined) yield* tc.removeClass(session.dev, id)
    yield* Effect.ignore(Effect.tryPromise(() => rm(speedFileOf(dir, session.username), { force: true })))
  })
