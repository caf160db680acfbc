import * as Schema from "effect/Schema"
import { DeviceId, ServerId } from "../platform/Ids.ts"

/*
 * The VPN room's schemas that its contract (`Api.ts`, `NodeApi.ts`) shows (issue 34): here, apart
 * from the services that read and write them, so the contract loads no server module. The
 * services re-export them from where they were.
 */

// ---- Servers -------------------------------------------------------------

export const Protocol = Schema.Literal("wireguard", "openvpn")
export type Protocol = typeof Protocol.Type

/**
 * A VPN server with everything configs need ([D50]): the one schema of a server. The spec's
 * Server (`VpnServer` in the API) is its `pick`.
 */
export const ServerRecord = Schema.Struct({
  id: ServerId,
  name: Schema.String,
  country: Schema.String,
  city: Schema.String,
  protocol: Protocol,
  ip: Schema.String,
  port: Schema.Int,
  transport: Schema.Literal("udp", "tcp"),
  public_key: Schema.NullOr(Schema.String),
  subnet: Schema.String,
  /** [D90]: the IPv6 subnet of dual-stack peers; null: IPv4 only */
  subnet6: Schema.NullOr(Schema.String),
  dns: Schema.String,
  ca_cert: Schema.NullOr(Schema.String),
  status: Schema.String
})

/** The spec's Server fields, exactly ([D50]). */
export const Server = ServerRecord.pick("id", "name", "country", "city", "protocol", "ip", "status")

/** What an admin sees once, at creation: the server and its node token ([D70], [D54]). */
export const CreatedServer = Schema.Struct({
  ...Server.fields,
  node_token: Schema.String,
  /** only when the admin gave no `public_key` for a WireGuard server: its generated private key, shown once */
  private_key: Schema.optional(Schema.String)
})

// ---- NodeAgents ----------------------------------------------------------

/** [D105]: the agent as the admin server routes show it */
export const AgentStatus = Schema.Struct({
  connected: Schema.Boolean,
  applied_revision: Schema.NullOr(Schema.Number),
  /** revisions of the node change log behind its newest one; null before the first report */
  lag: Schema.NullOr(Schema.Number),
  version: Schema.NullOr(Schema.String),
  last_seen_at: Schema.NullOr(Schema.DateFromSelf)
})
export type AgentStatus = typeof AgentStatus.Type

// ---- Credentials ---------------------------------------------------------

/** [D53]: the OpenVPN `auth-user-pass` pair as shown to its user; `secret` repeats `password` under the decision's word. */
export const VpnCredentials = Schema.Struct({
  username: Schema.String,
  password: Schema.String,
  secret: Schema.String,
  rotated_at: Schema.DateFromString
})
export type VpnCredentials = typeof VpnCredentials.Type

// ---- Devices -------------------------------------------------------------

export const PLATFORMS = ["ios", "android", "windows", "macos", "linux", "router", "other"] as const

export const Platform = Schema.Literal(...PLATFORMS)
export type Platform = typeof Platform.Type

/** [D90]: a device as its owner sees it. */
export const Device = Schema.Struct({
  id: DeviceId,
  name: Schema.String,
  platform: Platform,
  created_at: Schema.DateFromString
})
export type Device = typeof Device.Type

/** [D90]: a device with its OpenVPN credentials, shown in full only on create and rotate. */
export const DeviceWithCredentials = Schema.Struct({
  ...Device.fields,
  openvpn: Schema.Struct({ username: Schema.String, password: Schema.String })
})
export type DeviceWithCredentials = typeof DeviceWithCredentials.Type

// ---- DeviceActivity and subscription links ------------------------------

/** [D122]: one answered fetch of a device's subscription link */
export const SubscriptionFetch = Schema.Struct({
  at: Schema.DateFromString,
  address: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
})
export type SubscriptionFetch = typeof SubscriptionFetch.Type

/** [D122]: what `GET /s/<token>` serves, by `?format=` */
export const FORMATS = ["wireguard", "zip", "sing-box", "clash", "openvpn", "qr"] as const
export type Format = (typeof FORMATS)[number]

/** [D107]: a device's activity */
export const Activity = Schema.Struct({
  ...Device.fields,
  last_handshake_at: Schema.NullOr(Schema.DateFromString),
  online: Schema.Boolean,
  period_bytes: Schema.Int
})
export type Activity = typeof Activity.Type

/** [D107], [D122]: a device in `GET /v1/devices`, with its subscription link */
export const DeviceSeen = Schema.Struct({
  ...Activity.fields,
  subscription_url: Schema.String
})
export type DeviceSeen = typeof DeviceSeen.Type

/**
 * [D107], [D122]: a device as an admin sees it (`GET /v1/admin/users/{user}/devices`): its
 * activity and its link's last fetches, newest first (a sharing signal); not the link itself
 */
export const AdminDevice = Schema.Struct({
  ...Activity.fields,
  subscription_fetches: Schema.Array(SubscriptionFetch)
})
export type AdminDevice = typeof AdminDevice.Type

/** [D107]: one server of a device, with the bytes of the current period */
export const DeviceServer = Schema.Struct({
  server_id: ServerId,
  server_name: Schema.String,
  /** its WireGuard address on that server (null: no WireGuard peer there, e.g. OpenVPN) */
  address: Schema.NullOr(Schema.String),
  last_handshake_at: Schema.NullOr(Schema.DateFromString),
  rx_bytes: Schema.Int,
  tx_bytes: Schema.Int
})

/** [D107]: `GET /v1/devices/{device}` */
export const DeviceDetail = Schema.Struct({ ...DeviceSeen.fields, servers: Schema.Array(DeviceServer) })
export type DeviceDetail = typeof DeviceDetail.Type

// ---- Usage ---------------------------------------------------------------

/** [D70]: what an admin's addition answers. */
export const UsageRecorded = Schema.Struct({
  service_id: Schema.Int,
  period: Schema.String,
  used_bytes: Schema.Int,
  used_formatted: Schema.String
})

// ---- OpenVpnEntries ------------------------------------------------------

/**
 * [D106]: an OpenVPN server's node list names credentials, not keys: `{username, enabled,
 * speed_limit_mbps}` (the limit stays null until [D103]'s shaping fills it), and a username that
 * left the server (its device deleted) as `{username, removed: true}`.
 */
export const OpenVpnEntry = Schema.Struct({
  username: Schema.String,
  enabled: Schema.Boolean,
  speed_limit_mbps: Schema.NullOr(Schema.Int)
})

export const RemovedOpenVpnEntry = Schema.Struct({ username: Schema.String, removed: Schema.Literal(true) })

// ---- Peers ---------------------------------------------------------------

/** [D54]: a peer as its node is told it. */
export const NodePeer = Schema.Struct({
  public_key: Schema.String,
  allowed_ips: Schema.String,
  enabled: Schema.Boolean,
  /** [D103]: the peer's speed both ways in Mbps (10^6 bit/s); null: not shaped */
  speed_limit_mbps: Schema.NullOr(Schema.Int)
})

// ---- UsageReports --------------------------------------------------------

/** What a report answers ([D54], [D94]): the entries counted. */
export const Accepted = Schema.Struct({ accepted: Schema.Int })
export type Accepted = typeof Accepted.Type
