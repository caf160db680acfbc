import { createHash } from "node:crypto"
import { strToU8, zipSync } from "fflate"
import { stringify } from "yaml"
import type { WireguardParams } from "./Configs.ts"

/**
 * The answers of a subscription link ([D122]), pure: which format an app gets, and the formats
 * that are more than one server's file (the zip, sing-box's JSON, mihomo's YAML). The files of
 * each server come from `Downloads.render`, the same as the downloads'.
 */

// the formats the contract shows live in `Domain.ts` (issue 34)
import { type Format, FORMATS } from "./Domain.ts"
export { type Format, FORMATS }

/** [D122]: without `?format=`, the app's `User-Agent` chooses: sing-box, clash/mihomo/stash, else WireGuard */
export const formatFor = (userAgent: string | undefined): Format => {
  const agent = userAgent ?? ""
  // sing-box's own apps call themselves SFA, SFI, SFM and SFT (Android, iOS, macOS, tvOS)
  if (/sing-?box|^SF[AIMT]\//i.test(agent)) return "sing-box"
  if (/clash|mihomo|stash/i.test(agent)) return "clash"
  return "wireguard"
}

/** [D122]: a server's name in the zip: every character outside `A-Za-z0-9._-` becomes `-` */
export const fileName = (name: string): string => Array.from(name, (c) => (/^[A-Za-z0-9._-]$/.test(c) ? c : "-")).join("")

/**
 * Names that stay apart: a name already taken gets ` #<id>` (or `-<id>` in a file name, through
 * `fileName`), so two servers of one name are two entries, not one overwriting the other.
 */
export const distinctNames = <T extends { readonly id: number; readonly name: string }>(
  items: ReadonlyArray<T>,
  nameOf: (item: T) => string,
  suffix: (name: string, id: number) => string
): ReadonlyArray<readonly [T, string]> => {
  const taken = new Set<string>()
  return items.map((item) => {
    let name = nameOf(item)
    if (taken.has(name)) name = suffix(name, item.id)
    taken.add(name)
    return [item, name] as const
  })
}

/** A file of the zip: its name and its text. */
export interface ZipEntry {
  readonly name: string
  readonly text: string
}

/** Zip entries all carry this time, so the same files make the same bytes (and the same ETag). */
const ZIP_TIME = new Date(Date.UTC(2020, 0, 1))

/** [D122]: the files as one zip (deflated, a fixed time on every entry) */
export const zipOf = (entries: ReadonlyArray<ZipEntry>): Uint8Array =>
  zipSync(Object.fromEntries(entries.map((e) => [e.name, [strToU8(e.text), { mtime: ZIP_TIME }]])), { level: 6 })

/** A WireGuard server of a multi-server format: its display name (distinct) and the device's config there. */
export interface Tunnel {
  readonly name: string
  readonly config: WireguardParams
}

/** where the latency groups test each server (the default of both programs) */
export const TEST_URL = "https://www.gstatic.com/generate_204"
/** the tag of sing-box's `urltest` outbound and the name of mihomo's `url-test` group */
export const AUTO = "Auto"

const dnsServers = (dns: string) =>
  dns
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)

/**
 * [D122]: a sing-box configuration in the format of sing-box 1.11 and later: one `wireguard`
 * endpoint per server (endpoints replaced the WireGuard outbound in 1.11), a `urltest` outbound
 * over them that the route uses by default (`route.final`), a `tun` inbound (the 1.10 `address`
 * form) and DNS through the tunnel (the 1.11 rule actions `sniff` and `hijack-dns`). Written
 * from the documentation of sing-box 1.11: configuration/endpoint/wireguard,
 * configuration/outbound/urltest, configuration/inbound/tun, configuration/route.
 */
export const singBoxConfig = (tunnels: ReadonlyArray<Tunnel>) => {
  const dual = tunnels.some((t) => t.config.address6)
  const dns = dnsServers(tunnels[0]?.config.dns ?? "1.1.1.1")[0] ?? "1.1.1.1"
  return {
    log: { level: "warn" },
    dns: {
      servers: [{ tag: "vpn-dns", address: dns, detour: AUTO }],
      final: "vpn-dns",
      // a device without an IPv6 address in the tunnel asks for IPv4 answers only
      ...(dual ? {} : { strategy: "ipv4_only" })
    },
    inbounds: [
      {
        type: "tun",
        tag: "tun-in",
        address: ["172.19.0.1/30", "fdfe:dcba:9876::1/126"],
        auto_route: true,
        strict_route: true
      }
    ],
    endpoints: tunnels.map((t) => ({
      type: "wireguard",
      tag: t.name,
      address: [`${t.config.address}/32`, ...(t.config.address6 ? [`${t.config.address6}/128`] : [])],
      private_key: t.config.privateKey,
      peers: [
        {
          address: t.config.serverIp,
          port: t.config.port,
          public_key: t.config.serverPublicKey,
          allowed_ips: ["0.0.0.0/0", "::/0"],
          persistent_keepalive_interval: 25
        }
      ]
    })),
    outbounds: [
      { type: "urltest", tag: AUTO, outbounds: tunnels.map((t) => t.name), url: TEST_URL, interval: "3m", tolerance: 50 },
      { type: "direct", tag: "direct" }
    ],
    route: {
      rules: [{ action: "sniff" }, { protocol: "dns", action: "hijack-dns" }],
      final: AUTO,
      auto_detect_interface: true
    }
  }
}

/**
 * [D122]: a mihomo (Clash.Meta) configuration: one `wireguard` proxy per server and a `url-test`
 * group over them that every connection takes (`MATCH`). Written from the mihomo documentation
 * (wiki.metacubex.one: config/proxies/wg, config/proxy-groups/url-test, config/rules).
 */
export const mihomoConfig = (tunnels: ReadonlyArray<Tunnel>) => ({
  "mixed-port": 7890,
  "allow-lan": false,
  mode: "rule",
  "log-level": "warning",
  ipv6: tunnels.some((t) => t.config.address6),
  proxies: tunnels.map((t) => ({
    name: t.name,
    type: "wireguard",
    server: t.config.serverIp,
    port: t.config.port,
    ip: t.config.address,
    ...(t.config.address6 ? { ipv6: t.config.address6 } : {}),
    "private-key": t.config.privateKey,
    "public-key": t.config.serverPublicKey,
    "allowed-ips": ["0.0.0.0/0", "::/0"],
    "persistent-keepalive": 25,
    udp: true,
    "remote-dns-resolve": true,
    dns: dnsServers(t.config.dns)
  })),
  "proxy-groups": [{ name: AUTO, type: "url-test", proxies: tunnels.map((t) => t.name), url: TEST_URL, interval: 300, tolerance: 50 }],
  rules: [`MATCH,${AUTO}`]
})

export const singBoxJson = (tunnels: ReadonlyArray<Tunnel>): string => `${JSON.stringify(singBoxConfig(tunnels), null, 2)}\n`
export const mihomoYaml = (tunnels: ReadonlyArray<Tunnel>): string => stringify(mihomoConfig(tunnels))

/** [D122]: `Subscription-Userinfo` as the apps read it (bytes; `total` 0 for unlimited; `expire` in unix seconds) */
export const userinfo = (u: { readonly upload: number; readonly download: number; readonly total: number; readonly expiresAt: Date }) =>
  `upload=${u.upload}; download=${u.download}; total=${u.total}; expire=${Math.floor(u.expiresAt.getTime() / 1000)}`

/** A strong ETag of everything an answer carries that may change: its type, name, usage header and bytes. */
export const subscriptionEtag = (parts: ReadonlyArray<string | Uint8Array>): string => {
  const hash = createHash("sha256")
  for (const part of parts) hash.update(part).update("\u0000")
  return `"${hash.digest("base64url").slice(0, 32)}"`
}
