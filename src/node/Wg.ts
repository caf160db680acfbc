import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/**
 * The `wg` tool of wireguard-tools, as the node agent uses it ([D93]): read the interface's
 * peers and counters (`wg show <if> dump`) and change one peer (`wg set <if> peer ...`). Only
 * peers are ever changed: the interface's own key and port are never touched.
 */
export class WgFailed extends Data.TaggedError("WgFailed")<{ readonly command: string; readonly message: string }> {}

export interface WgShape {
  readonly dump: (iface: string) => Effect.Effect<string, WgFailed>
  readonly set: (iface: string, args: ReadonlyArray<string>) => Effect.Effect<void, WgFailed>
}

export class Wg extends Context.Tag("node/Wg")<Wg, WgShape>() {
  /** the real `wg` on PATH, run without a shell */
  static readonly Live = Layer.succeed(Wg, {
    dump: (iface) => run(["show", iface, "dump"]),
    set: (iface, args) => Effect.asVoid(run(["set", iface, ...args]))
  })
}

const run = (args: ReadonlyArray<string>): Effect.Effect<string, WgFailed> =>
  Effect.tryPromise({
    try: async () => {
      const child = Bun.spawn(["wg", ...args], { stdout: "pipe", stderr: "pipe", stdin: "ignore" })
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
      return { stdout, stderr, code }
    },
    catch: (e) => new WgFailed({ command: `wg ${args[0]}`, message: e instanceof Error ? e.message : String(e) })
  }).pipe(
    Effect.flatMap(({ code, stderr, stdout }) =>
      code === 0 ? Effect.succeed(stdout) : Effect.fail(new WgFailed({ command: `wg ${args[0]}`, message: stderr.trim() || `exit code ${code}` }))
    )
  )

/** A peer as `wg show <if> dump` prints it. */
export interface DumpPeer {
  readonly publicKey: string
  /** sorted, normalised (`(none)` is empty) */
  readonly allowedIps: ReadonlyArray<string>
  readonly rx: number
  readonly tx: number
  /** [D107]: unix seconds of the last handshake, 0 = never */
  readonly latestHandshake: number
}

/**
 * `wg show <if> dump`: a first line for the interface (private key, public key, listen port,
 * fwmark), then one tab-separated line per peer: public key, preshared key, endpoint, allowed
 * IPs, latest handshake, rx bytes, tx bytes, persistent keepalive.
 */
export const parseDump = (text: string): ReadonlyArray<DumpPeer> =>
  text
    .split("\n")
    .slice(1)
    .map((line) => line.split("\t"))
    .filter((fields) => fields.length >= 8)
    .map((fields) => ({
      publicKey: fields[0]!,
      allowedIps: normaliseIps(fields[3]!),
      rx: Number(fields[5]),
      tx: Number(fields[6]),
      latestHandshake: Number(fields[4]) || 0
    }))

/** `10.66.0.2/32, fd42::2/128` or `(none)` -> a sorted list without blanks */
export const normaliseIps = (text: string): ReadonlyArray<string> =>
  text === "(none)"
    ? []
    : text
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s.length > 0)
        .sort()
