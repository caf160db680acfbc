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
 * session: it leaves the speed the API answered in `OPENVPN_STATE_DIR` (a file holding a number
 * or `none`, never a secret). The session's address gets a class on the tun device the way a
 * WireGuard peer does (`Tc`), its id taken from the address.
 *
 * Issue 34: the file is keyed by the session, not the username: the SHA-256 of the username and
 * the client's real address and port (`untrusted_ip`/`untrusted_port` when it authenticates,
 * `trusted_ip`/`trusted_port` when it connects and disconnects; `*_ip6` on IPv6). A second
 * connection with the same credentials made OpenVPN drop the first, whose `client-disconnect`
 * deleted the username's file between the new session's auth and connect: the new session went
 * unshaped. Now the first session's disconnect removes only its own file, and shaping fails
 * closed: `openvpn-connect` refuses a session whose speed it cannot find, or whose limit `tc`
 * could not apply (OpenVPN then drops the client, which may connect again); `openvpn-auth`
 * refuses a session whose speed it cannot leave.
 */
export class OpenVpnScriptFailed extends Data.TaggedError("OpenVpnScriptFailed")<{ readonly message: string }> {}

/** `OPENVPN_STATE_DIR` (default `/run/vpn-api-openvpn`): where openvpn-auth leaves each user's speed */
export const openvpnStateDir = Config.string("OPENVPN_STATE_DIR").pipe(Config.withDefault("/run/vpn-api-openvpn"))

/** One OpenVPN session: its username and the client's real address and port (issue 34). */
export interface SessionKey {
  readonly username: string
  readonly client: string
}

/**
 * The session an OpenVPN script runs for, from its environment: `phase` "auth" reads the
 * `untrusted_*` variables (set for `auth-user-pass-verify`), "session" the `trusted_*` ones (set
 * for `client-connect` and `client-disconnect`); undefined when they are missing
 */
export const sessionKeyOf = (env: Record<string, string | undefined>, phase: "auth" | "session", username: string): SessionKey | undefined => {
  const prefix = phase === "auth" ? "untrusted" : "trusted"
  const ip = env[`${prefix}_ip`] ?? env[`${prefix}_ip6`]
  const port = env[`${prefix}_port`]
  if (ip === undefined || ip.length === 0 || port === undefined || !/^\d{1,5}$/.test(port)) return undefined
  return { username, client: `${ip} ${port}` }
}

const speedFileOf = (dir: string, session: SessionKey) =>
  join(dir, `${createHash("sha256").update(`${session.username}\n${session.client}`).digest("hex")}.speed`)

const failed = (e: unknown) => new OpenVpnScriptFailed({ message: e instanceof Error ? e.message : String(e) })

/** openvpn-auth: the speed of an allowed session, for the connect script that follows */
export const rememberSpeed = (dir: string, session: SessionKey, speed: number | null) =>
  Effect.tryPromise({
    try: async () => {
      await mkdir(dir, { recursive: true, mode: 0o700 })
      await writeFile(speedFileOf(dir, session), speed === null ? "none\n" : `${speed}\n`, { mode: 0o600 })
    },
    catch: failed
  })

/**
 * The speed openvpn-auth left for the session (null: no limit). Issue 34: nothing left (or not a
 * speed) fails: the session is refused, never let through unshaped.
 */
export const recalledSpeed = (dir: string, session: SessionKey) =>
  Effect.tryPromise({ try: () => readFile(speedFileOf(dir, session), "utf8"), catch: failed }).pipe(
    Effect.mapError(() => new OpenVpnScriptFailed({ message: `no speed left by openvpn-auth for ${session.username}'s session: refused` })),
    Effect.flatMap((text) => {
      const value = text.trim()
      if (value === "none") return Effect.succeed(null)
      if (/^\d{1,5}$/.test(value) && Number(value) > 0) return Effect.succeed(Number(value))
      return Effect.fail(new OpenVpnScriptFailed({ message: `the speed left for ${session.username}'s session is not one: refused` }))
    })
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
  /** the client's real address and port (`trusted_ip` `trusted_port`); absent: the session cannot be found */
  readonly client?: string
}

export const sessionOf = (env: Record<string, string | undefined>): SessionEnv | undefined => {
  const dev = env["dev"]
  const address = env["ifconfig_pool_remote_ip"]
  const username = env["username"] ?? env["common_name"]
  if (dev === undefined || !/^[A-Za-z0-9_.-]{1,15}$/.test(dev) || address === undefined || username === undefined) return undefined
  const key = sessionKeyOf(env, "session", username)
  return key === undefined ? { dev, address, username } : { dev, address, username, client: key.client }
}

const keyOfSession = (session: SessionEnv) =>
  session.client === undefined
    ? Effect.fail(new OpenVpnScriptFailed({ message: "no trusted_ip/trusted_port: the session cannot be told apart: refused" }))
    : Effect.succeed<SessionKey>({ username: session.username, client: session.client })

/**
 * client-connect: the session's address shaped at its speed, or left unshaped when it has no
 * limit. Fails (the session is refused) when no speed was left for it or `tc` could not apply its
 * limit (issue 34: fail closed).
 */
export const openvpnConnect = (session: SessionEnv, dir: string) =>
  Effect.gen(function* () {
    const tc = yield* Tc
    const id = classIdOfAddress(session.address)
    if (id === undefined) return yield* Effect.fail(new OpenVpnScriptFailed({ message: `not an IPv4 address: ${session.address}` }))
    const speed = yield* recalledSpeed(dir, yield* keyOfSession(session))
    if (speed === null) {
      // a class left by an earlier session of this address: a slower session, never a bypass
      yield* Effect.ignore(tc.removeClass(session.dev, id))
      return speed
    }
    yield* tc.ensure(session.dev)
    yield* tc.setClass(session.dev, id, speed, [`${session.address}/32`])
    return speed
  })

/** client-disconnect: the session's class removed, and the speed the auth script left for it (this session's only) */
export const openvpnDisconnect = (session: SessionEnv, dir: string) =>
  Effect.gen(function* () {
    const tc = yield* Tc
    const id = classIdOfAddress(session.address)
    const forget =
      session.client === undefined
        ? Effect.void
        : Effect.ignore(Effect.tryPromise(() => rm(speedFileOf(dir, { username: session.username, client: session.client! }), { force: true })))
    yield* (id === undefined ? Effect.void : tc.removeClass(session.dev, id)).pipe(Effect.ensuring(forget))
  })
