import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Access } from "./Access.ts"
import { openvpnProfile, slug, wireguardConfig } from "./Configs.ts"
import { Devices } from "./Devices.ts"
import { ServerNotConfigured, type SubnetFull } from "./Errors.ts"
import { type Peer, Peers } from "./Peers.ts"

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
        // issue 27: a chain of steps on the hot path (no generator); for the spec's route the
        // server, its grant, the usage and the default device's peer in one read ([D52])
        Effect.flatMap(deviceOf(userId, deviceId), (chosen) =>
          Effect.flatMap(
            chosen === undefined
              ? access.reachWireguard(userId, serverId)
              : Effect.map(access.reach(userId, serverId, "wireguard"), ({ server }) => ({ server, peer: Option.none<Peer>() })),
            ({ peer: known, server }): Effect.Effect<ClientFile, ServerNotConfigured | SubnetFull> => {
              const publicKey = server.public_key
              if (publicKey === null) return Effect.fail(new ServerNotConfigured())
              const peer = Option.isSome(known)
                ? Effect.succeed(known.value)
                : chosen !== undefined
                ? peers.ensure({ id: chosen.id, userId }, server)
                : Effect.flatMap(devices.defaultOf(userId), (device) => peers.ensure({ id: device.id, userId }, server))
              return Effect.map(peer, (p): ClientFile => ({
                text: wireguardConfig({
                  privateKey: p.privateKey,
                  address: p.address,
                  address6: p.address6,
                  dns: server.dns,
                  serverPublicKey: publicKey,
                  serverIp: server.ip,
                  port: server.port
                }),
                filename: `${slug(server.name)}.conf`
              }))
            }
          )),
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
