import * as Effect from "effect/Effect"
import { Access } from "./Access.ts"
import { openvpnProfile, slug, wireguardConfig } from "./Configs.ts"
import { ServerNotConfigured } from "./Errors.ts"
import { Peers } from "./Peers.ts"

/** A client file and the name it is saved under. */
export interface ClientFile {
  readonly text: string
  readonly filename: string
}

/** The client files of [D52] and [D53], for a user who may reach the server. */
export class Downloads extends Effect.Service<Downloads>()("vpn/Downloads", {
  effect: Effect.gen(function*() {
    const access = yield* Access
    const peers = yield* Peers
    return {
      /** [D52]: the user's WireGuard config, their peer made on first download */
      wireguard: (userId: number, serverId: number) =>
        Effect.gen(function*() {
          const { server } = yield* access.reach(userId, serverId, "wireguard")
          if (server.public_key === null) return yield* Effect.fail(new ServerNotConfigured())
          const peer = yield* peers.ensure(userId, server)
          const text = wireguardConfig({
            privateKey: peer.privateKey,
            address: peer.address,
            dns: server.dns,
            serverPublicKey: server.public_key,
            serverIp: server.ip,
            port: server.port
          })
          return { text, filename: `${slug(server.name)}.conf` } satisfies ClientFile
        }),
      /** [D53]: the OpenVPN client profile (the same for every user of the server) */
      openvpn: (userId: number, serverId: number) =>
        Effect.map(access.reach(userId, serverId, "openvpn"), ({ server }): ClientFile => ({
          text: openvpnProfile({ transport: server.transport, serverIp: server.ip, port: server.port, caCert: server.ca_cert ?? "" }),
          filename: `${slug(server.name)}.ovpn`
        }))
    } as const
  }),
  dependencies: [Access.Default, Peers.Default]
}) {}
