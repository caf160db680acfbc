import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { readFile } from "node:fs/promises"
import { NodeClient } from "./NodeClient.ts"

/**
 * [D93]: `vpn-api node-agent openvpn-auth <file>`, OpenVPN's `auth-user-pass-verify <cmd>
 * via-file`: OpenVPN writes the client's username and password on two lines of a temporary
 * file, appends its path to the command, and lets the client in when the command exits 0.
 */
export class CredentialsFileUnreadable extends Data.TaggedError("CredentialsFileUnreadable")<{ readonly message: string }> {}

/** the username and password of the file's first two lines (a CRLF file too) */
export const parseCredentialsFile = (text: string): { readonly username: string; readonly password: string } | undefined => {
  const [username, password] = text.split(/\r?\n/)
  return username !== undefined && password !== undefined && username.length > 0 ? { username, password } : undefined
}

/** whether the API lets these credentials connect to this node (an unreadable file: no), at what speed ([D103]) */
export const openvpnAuthFromFile = (file: string) =>
  Effect.gen(function* () {
    const api = yield* NodeClient
    const text = yield* Effect.tryPromise({
      try: () => readFile(file, "utf8"),
      catch: (e) => new CredentialsFileUnreadable({ message: e instanceof Error ? e.message : String(e) })
    })
    const credentials = parseCredentialsFile(text)
    if (credentials === undefined) return yield* Effect.fail(new CredentialsFileUnreadable({ message: "expected a username and a password on two lines" }))
    const allowance = yield* api.openvpnAllow(credentials.username, credentials.password)
    return { ...allowance, username: credentials.username }
  })
