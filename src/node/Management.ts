import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { connect, type Socket } from "node:net"

/**
 * [D106]: OpenVPN's management interface (`management <host> <port>` or `management <path> unix`
 * in the server's config), as the node agent uses it: `kill <username>` ends every session of
 * that common name (the server runs with `username-as-common-name`). One short connection per
 * command; no management password (bind it to loopback or a 0700 directory's socket).
 */

/** `host:port` (TCP) or the path of a Unix socket */
export type ManagementTarget = { readonly host: string; readonly port: number } | { readonly path: string }

/** `OPENVPN_MANAGEMENT`: `host:port`, `[v6]:port` or an absolute socket path; undefined when malformed */
export const parseManagementTarget = (value: string): ManagementTarget | undefined => {
  const v = value.trim()
  if (v.startsWith("/")) return { path: v }
  const match = /^\[?([^\]\s]+?)\]?:(\d{1,5})$/.exec(v)
  if (match === null) return undefined
  const port = Number(match[2])
  return port >= 1 && port <= 65535 ? { host: match[1]!, port } : undefined
}

export class ManagementFailed extends Data.TaggedError("ManagementFailed")<{ readonly message: string }> {}

/** what OpenVPN answered a `kill`: sessions ended, or none of that name was connected */
export type KillOutcome = "killed" | "not-connected"

export interface ManagementShape {
  readonly kill: (username: string) => Effect.Effect<KillOutcome, ManagementFailed>
}

export class OpenVpnManagement extends Context.Tag("node/OpenVpnManagement")<OpenVpnManagement, ManagementShape>() {
  static readonly layer = (target: ManagementTarget) => Layer.succeed(OpenVpnManagement, make(target))
}

const TIMEOUT_MS = 2000

/** one command, its one-line `SUCCESS:`/`ERROR:` answer (the `>INFO` banner and other `>` lines skipped) */
const command = (target: ManagementTarget, line: string) =>
  new Promise<string>((resolve, reject) => {
    const socket: Socket = "path" in target ? connect(target.path) : connect(target.port, target.host)
    let buffer = ""
    let sent = false
    const done = (error: Error | undefined, answer?: string) => {
      clearTimeout(timer)
      socket.end("quit\n")
      socket.destroy()
      if (error !== undefined) reject(error)
      else resolve(answer!)
    }
    const timer = setTimeout(() => done(new Error(`no answer in ${TIMEOUT_MS} ms`)), TIMEOUT_MS)
    socket.on("error", (e) => done(e))
    socket.on("connect", () => {
      sent = true
      socket.write(`${line}\n`)
    })
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8")
      for (;;) {
        const end = buffer.indexOf("\n")
        if (end < 0) return
        const text = buffer.slice(0, end).replace(/\r$/, "")
        buffer = buffer.slice(end + 1)
        if (sent && (text.startsWith("SUCCESS:") || text.startsWith("ERROR:"))) return done(undefined, text)
      }
    })
  })

export const make = (target: ManagementTarget): ManagementShape => ({
  kill: (username) =>
    /^[\x21-\x7e]{1,255}$/.test(username)
      ? Effect.tryPromise({
          try: () => command(target, `kill ${username}`),
          catch: (e) => new ManagementFailed({ message: e instanceof Error ? e.message : String(e) })
        }).pipe(
          Effect.flatMap((answer) =>
            answer.startsWith("SUCCESS:")
              ? Effect.succeed<KillOutcome>("killed")
              : /not found/i.test(answer)
                ? Effect.succeed<KillOutcome>("not-connected")
                : Effect.fail(new ManagementFailed({ message: answer }))
          )
        )
      : Effect.fail(new ManagementFailed({ message: "not a username OpenVPN can name" }))
})
