import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { describeConfigError } from "../platform/Config.ts"
import { type ManagementTarget, parseManagementTarget } from "./Management.ts"

/** The node agent's environment ([D93]); the API server's own configuration is not needed. */
export interface AgentConfigShape {
  /** `NODE_API_URL`: the API's base URL, without `/v1` */
  readonly apiUrl: string
  /** `NODE_TOKEN`: the server's node token ([D54]) */
  readonly token: Redacted.Redacted<string>
  /** `WG_INTERFACE` (default `wg0`) */
  readonly iface: string
  /** `NODE_POLL_SECONDS` (default 60 since [D105]: the push stream carries changes; 10 s while it is down) */
  readonly pollSeconds: number
  /** `NODE_REPORT_SECONDS` (default 10): counters between polls ([D105]) */
  readonly reportSeconds: number
  /** [D106] `OPENVPN_MANAGEMENT`: the OpenVPN server's management interface; set: the agent follows OpenVPN credentials */
  readonly openvpnManagement: Option.Option<ManagementTarget>
}

const apiUrl = Config.string("NODE_API_URL").pipe(
  Config.map((s) => s.trim().replace(/\/+$/, "")),
  Config.validate({
    message: "must be an absolute http(s) URL",
    validation: (s) => {
      try {
        return ["http:", "https:"].includes(new URL(s).protocol)
      } catch {
        return false
      }
    }
  })
)

/** the nodes' connection: the API's address and the node token */
export const nodeConnection = Config.all({
  apiUrl,
  token: Config.string("NODE_TOKEN").pipe(
    Config.map((s) => s.trim()),
    Config.validate({ message: "must not be empty", validation: (s) => s.length > 0 }),
    Config.map(Redacted.make)
  )
})

export const agentConfig = Config.all({
  connection: nodeConnection,
  // a Linux interface name (at most 15 characters); it is an argument of `wg`, never a shell word
  iface: Config.string("WG_INTERFACE").pipe(
    Config.withDefault("wg0"),
    Config.validate({ message: "must be an interface name (1-15 of A-Z a-z 0-9 _ = + . -)", validation: (s) => /^[A-Za-z0-9_=+.-]{1,15}$/.test(s) })
  ),
  pollSeconds: Config.integer("NODE_POLL_SECONDS").pipe(
    Config.withDefault(60),
    Config.validate({ message: "must be an integer between 1 and 3600", validation: (n) => n >= 1 && n <= 3600 })
  ),
  reportSeconds: Config.integer("NODE_REPORT_SECONDS").pipe(
    Config.withDefault(10),
    Config.validate({ message: "must be an integer between 1 and 3600", validation: (n) => n >= 1 && n <= 3600 })
  ),
  openvpnManagement: Config.option(
    Config.string("OPENVPN_MANAGEMENT").pipe(
      Config.validate({ message: "must be host:port or an absolute Unix socket path", validation: (s) => parseManagementTarget(s) !== undefined }),
      Config.map((s) => parseManagementTarget(s)!)
    )
  )
}).pipe(Config.map(({ connection, ...rest }): AgentConfigShape => ({ ...connection, ...rest })))

/** Reads a configuration; a bad value is one line naming the variable. */
export const load = <A>(config: Config.Config<A>): Effect.Effect<A, string> =>
  Effect.mapError(config, (error) =>
    describeConfigError(error)
      .replace("Invalid configuration", "Invalid node agent configuration")
      .replace(/Expected \S+ to exist in the process context/g, "is required")
  )
