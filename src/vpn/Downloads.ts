import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Access } from "./Access.ts"
import { openvpnProfile, slug, type WireguardParams, wireguardConfig } from "./Configs.ts"
import { Devices } from "./Devices.ts"
import { ServerNotConfigured, type SubnetFull } from "./Errors.ts"
import { type Peer, type PeerDevice, Peers } from "./Peers.ts"
import type { ServerRow } from "./Servers.ts"
import type { ServerId, DeviceId, UserId } from "../platform/Ids.ts"

/** A client file and the name it is saved under. */
export interface ClientFile {
  readonly text: string
  readonly filename: string
}

/**
 * A device's configuration for one server: the client file of [D52]/[D53], and for a WireGuard
 * server the values it was written from (what the sing-box and mihomo formats of [D122] use).
 */
export interface DeviceConfig {
  readonly server: ServerRow
  readonly file: ClientFile
  readonly wireguard: WireguardParams | undefined
}

/**
 * [D90]: a QR code (PNG) of exactly this text, for phone apps to scan. The `qrcode` package (about
 * 12 MB resident) is loaded at the first QR code a process draws, not at start-up (issue 27; docs/decisions.md, "Idle memory").
 */
export const qrPng = (text: string): Effect.Effect<Uint8Array> =>
  Effect.promise(() =>
    import("qrcode").then(({ default: QRCode }) => QRCode.toBuffer(text, { type: "png", errorCorrectionLevel: "M", margin: 4, scale: 4 }))
  ).pipe(Effect.map((buffer) => new Uint8Array(buffer)))

/**
 * The client files of [D52] and [D53], for a user who may reach the server: of one of their
 * devices ([D90]), or of their default device for the spec's routes (made at the first download).
 * A device that is not the caller's is 404 before anything else is looked at. `render` is the one
 * writing of a device's config for a server: the downloads, the zip and the link of [D122] all
 * go through it.
 */
export class Downloads extends Effect.Service<Downloads>()("vpn/Downloads", {
  effect: Effect.gen(function* () {
    const access = yield* Access
    const peers = yield* Peers
    const devices = yield* Devices
    const deviceOf = (userId: UserId, deviceId: DeviceId | undefined) => (deviceId === undefined ? Effect.succeed(undefined) : devices.owned(userId, deviceId))

    /**
     * The device's config for the server: for WireGuard its peer there (`known`, else made on
     * first use for the device `device` yields) written as wg-quick text; for OpenVPN the
     * server's profile (the same for every device: its credentials go into `auth-user-pass`)
     */
    const render = (
      server: ServerRow,
      device: Effect.Effect<PeerDevice>,
      known: Option.Option<Peer> = Option.none()
    ): Effect.Effect<DeviceConfig, ServerNotConfigured | SubnetFull> => {
      if (server.protocol === "openvpn") {
        return Effect.succeed({
          server,
          file: {
            text: openvpnProfile({ transport: server.transport, serverIp: server.ip, port: server.port, caCert: server.ca_cert ?? "" }),
            filename: `${slug(server.name)}.ovpn`
          },
          wireguard: undefined
        })
      }
      const serverPublicKey = server.public_key
      if (serverPublicKey === null) return Effect.fail(new ServerNotConfigured())
      const peer = Option.isSome(known) ? Effect.succeed(known.value) : Effect.flatMap(device, (d) => peers.ensure(d, server))
      return Effect.map(peer, (p): DeviceConfig => {
        const wireguard: WireguardParams = {
          privateKey: p.privateKey,
          address: p.address,
          address6: p.address6,
          dns: server.dns,
          serverPublicKey,
          serverIp: server.ip,
          port: server.port
        }
        return { server, file: { text: wireguardConfig(wireguard), filename: `${slug(server.name)}.conf` }, wireguard }
      })
    }

    return {
      render,
      /** [D52]: the device's WireGuard config, its peer made on first download */
      wireguard: (userId: UserId, serverId: ServerId, deviceId?: DeviceId) =>
        // issue 27: a chain of steps on the hot path (no generator); for the spec's route the
        // server, its grant, the usage and the default device's peer in one read ([D52])
        Effect.flatMap(deviceOf(userId, deviceId), (chosen) =>
          Effect.flatMap(
            chosen === undefined
              ? access.reachWireguard(userId, serverId)
              : Effect.map(access.reach(userId, serverId, "wireguard"), ({ server }) => ({ server, peer: Option.none<Peer>() })),
            ({ peer, server }) =>
              Effect.map(
                render(
                  server,
                  chosen !== undefined
                    ? Effect.succeed({ id: chosen.id, userId })
                    : Effect.map(devices.defaultOf(userId), (device) => ({ id: device.id, userId })),
                  peer
                ),
                (config) => config.file
              )
          )
        ),
      /** [D53]: the OpenVPN client profile (the same for every user and device of the server) */
      openvpn: (userId: UserId, serverId: ServerId, deviceId?: DeviceId) =>
        Effect.zipRight(
          deviceOf(userId, deviceId),
          Effect.flatMap(access.reach(userId, serverId, "openvpn"), ({ server }) =>
            render(server, Effect.succeed({ id: deviceId ?? 0, userId })).pipe(
              Effect.map((config) => config.file),
              // an OpenVPN profile never fails to render
              Effect.orDie
            )
          )
        )
    } as const
  }),
  dependencies: [Access.Default, Peers.Default, Devices.Default]
}) {}
