import * as Effect from "effect/Effect"
import { Access } from "./Access.ts"
import { openvpnProfile, slug, wireguardConfig } from "./Configs.ts"
import { Devices } from "./Devices.ts"
import { ServerNotConfigured } from "./Errors.ts"
import { Peers } from "./Peers.ts"

/** A client file and the name it is saved under. */
export interface ClientFile {
  readonly text: string
  readonly filename: string
}

/**
 * [D90]: a QR code (PNG) of exactly this text, for phone apps to scan. The `qrcode` package (about
 * 12 MB resident) is loaded at the first QR code a process draws, not at start-up (issue 27; docs/decisions.md, "Idle memory").
 */
export const qrPng = (text: string): Effect.Effect<Uint8Array> =>
  Effect.promise(() =>
    import("qrcode").then(({ default: QRCode }) => QRCode.toBuffer(text, { type: "png", errorCorrectionLevel: "M", margin: 4, scale: 4 }))
  ).pipe(
    Effect.map((buffer) => new Uint8Array(buffer))
  )

/**
 * The client files of [D52] and [D53], for a user who may reach the server: of one of their
 * devices ([D90]), or of their default device for the spec's routes (made at the first download).
 * A device that is not the caller's is 404 before anything else is looked at.
 */
export class Downloads extends Effect.Service<Downloads>()("vpn/Downloads", {
  effect: Effect.gen(function*() {
    const access = yield* Access
    const peers = yield* Peers
    const devices = yield* Devices
    const deviceOf = (userId: number, deviceId: number | undefined) =>
      deviceId === undefined ? Effect.succeed(undefined) : devices.owned(userId, deviceId)

    return {
      /** [D52]: the device's WireGuard config, its peer made on first download */
      wireguard: (userId: number, serverId: number, deviceId?: number) =>
        Effect.gen(function*() {
          const chosen = yield* deviceOf(userId, deviceId)
          const { server } = yield* access.reach(userId, serverId, "wireguard")
          if (server.public_key === null) return yield* Effect.fail(new ServerNotConfigured())
          const device = chosen ?? (yield* devices.defaultOf(userId))
          const peer = yield* peers.ensure({ id: device.id, userId }, server)
          const text = wireguardConfig({
            privateKey: peer.privateKey,
            address: peer.address,
            address6: peer.address6,
            dns: server.dns,
            serverPublicKey: server.public_key,
            serverIp: server.ip,
            port: server.port
          })
          return { text, filename: `${slug(server.name)}.conf` } satisfies ClientFile
        }),
      /** [D53]: the OpenVPN client profile (the same for every user and device of the server) */
      openvpn: (userId: number, serverId: number, deviceId?: number) =>
        Effect.zipRight(
          deviceOf(userId, deviceId),
          Effect.map(access.reach(userId, serverId, "openvpn"), ({ server }): ClientFile => ({
            text: openvpnProfile({ transport: server.transport, serverIp: server.ip, port: server.port, caCert: server.ca_cert ?? "" }),
            filename: `${slug(server.name)}.ovpn`
          }))
        )
    } as const
  }),
  dependencies: [Access.Default, Peers.Default, Devices.Default]
}) {}
