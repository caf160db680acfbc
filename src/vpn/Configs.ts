import { isIP } from "../platform/Ip.ts"

/**
 * The client files of [D52] and [D53] and the IPv4 arithmetic of peer addresses, pure.
 */

/** `Amsterdam 1` -> `amsterdam-1` (the download's file name). */
export const slug = (name: string): string => {
  const s = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
  return s.length > 0 ? s.slice(0, 100) : "server"
}

/** `ip:port`, with brackets for an IPv6 host. */
export const endpoint = (ip: string, port: number): string => (isIP(ip) === 6 ? `[${ip}]:${port}` : `${ip}:${port}`)

/** What a device's WireGuard config for a server is written from ([D52]). */
export interface WireguardParams {
  readonly privateKey: string
  readonly address: string
  /** [D90]: the peer's IPv6 address on a dual-stack server */
  readonly address6?: string | null
  readonly dns: string
  readonly serverPublicKey: string
  readonly serverIp: string
  readonly port: number
}

export const wireguardConfig = (c: WireguardParams): string =>
  [
    "[Interface]",
    `PrivateKey = ${c.privateKey}`,
    `Address = ${c.address}/32${c.address6 ? `, ${c.address6}/128` : ""}`,
    `DNS = ${c.dns}`,
    "",
    "[Peer]",
    `PublicKey = ${c.serverPublicKey}`,
    `Endpoint = ${endpoint(c.serverIp, c.port)}`,
    "AllowedIPs = 0.0.0.0/0, ::/0",
    "PersistentKeepalive = 25",
    ""
  ].join("\n")

export const openvpnProfile = (c: { readonly transport: "udp" | "tcp"; readonly serverIp: string; readonly port: number; readonly caCert: string }): string =>
  [
    "client",
    "dev tun",
    `proto ${c.transport}`,
    `remote ${c.serverIp} ${c.port}`,
    "resolv-retry infinite",
    "nobind",
    "persist-key",
    "persist-tun",
    "remote-cert-tls server",
    "auth-user-pass",
    "verb 3",
    "<ca>",
    ...(c.caCert.trim().length > 0 ? [c.caCert.trim()] : []),
    "</ca>",
    ""
  ].join("\n")

// ---- IPv4 ----------------------------------------------------------------------------------

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

export const ipv4ToInt = (ip: string): number => ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0)

export const intToIpv4 = (n: number): string => [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".")

export interface Ipv4Subnet {
  readonly network: number
  readonly prefix: number
}

/** Smallest subnet that still leaves one client address: network, .1 (server), client, broadcast. */
export const MAX_PREFIX = 30
export const MIN_PREFIX = 8

/**
 * `10.66.0.0/16` -> the subnet with host bits cleared, or undefined when it is not an IPv4
 * CIDR with a prefix between /8 and /30.
 */
export const parseSubnet = (text: string): Ipv4Subnet | undefined => {
  const match = /^([0-9.]+)\/(\d{1,2})$/.exec(text.trim())
  if (!match || !IPV4.test(match[1]!)) return undefined
  const prefix = Number(match[2])
  if (prefix < MIN_PREFIX || prefix > MAX_PREFIX) return undefined
  const size = 2 ** (32 - prefix)
  const network = Math.floor(ipv4ToInt(match[1]!) / size) * size
  return { network, prefix }
}

export const formatSubnet = (s: Ipv4Subnet): string => `${intToIpv4(s.network)}/${s.prefix}`

/** The number of addresses of the subnet (network and broadcast included). */
export const hostCount = (subnet: Ipv4Subnet): number => 2 ** (32 - subnet.prefix)

/**
 * The lowest address of the subnet that is none of network, server (.1 = network + 1),
 * broadcast, or `taken`; undefined when the subnet is full.
 */
export const nextFreeAddress = (subnet: Ipv4Subnet, taken: ReadonlyArray<string>): string | undefined => {
  const used = new Set(taken.map(ipv4ToInt))
  const broadcast = subnet.network + 2 ** (32 - subnet.prefix) - 1
  for (let candidate = subnet.network + 2; candidate < broadcast; candidate++) {
    if (!used.has(candidate)) return intToIpv4(candidate)
  }
  return undefined
}
