import { describe, expect, test } from "bun:test"
import Ajv from "ajv"
import { strFromU8, unzipSync } from "fflate"
import { parse as parseYaml } from "yaml"
import { matchesEtag } from "../../src/platform/Etag.ts"
import {
  distinctNames,
  subscriptionEtag,
  fileName,
  formatFor,
  mihomoConfig,
  mihomoYaml,
  singBoxConfig,
  singBoxJson,
  type Tunnel,
  userinfo,
  zipOf
} from "../../src/vpn/SubscriptionFormats.ts"

// [D122]: the sing-box and mihomo outputs against the shapes those programs document, and the
// link's pure rules (format by User-Agent, file names, Subscription-Userinfo, ETag). No database.

const tunnels: ReadonlyArray<Tunnel> = [
  {
    name: "Amsterdam 1",
    config: {
      privateKey: "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=",
      address: "10.66.0.2",
      address6: null,
      dns: "1.1.1.1, 1.0.0.1",
      serverPublicKey: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
      serverIp: "198.51.100.10",
      port: 51820
    }
  },
  {
    name: "Zürich #7",
    config: {
      privateKey: "cFGz4TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=",
      address: "10.77.0.9",
      address6: "fd42:66::9",
      dns: "9.9.9.9",
      serverPublicKey: "HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=",
      serverIp: "2001:db8::10",
      port: 443
    }
  }
]

const WG_KEY = "^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$"
const closed = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})
const str = { type: "string" }
const strings = { type: "array", items: str }
const port = { type: "integer", minimum: 1, maximum: 65535 }

/**
 * sing-box 1.11's configuration, the parts this server writes, each object closed to the fields
 * its page documents (sing-box.sagernet.org, as of 1.11): configuration/endpoint/wireguard ("Since
 * sing-box 1.11.0"; `address`, `private_key`, `peers` required; a peer's `public_key` and
 * `allowed_ips` required), configuration/outbound/urltest (`outbounds` required; `interval` a
 * duration string, `tolerance` milliseconds), configuration/outbound/direct,
 * configuration/inbound/tun (the `address` list that replaced `inet4_address` in 1.10),
 * configuration/route (`rules`, `final`, `auto_detect_interface`) with 1.11's rule actions
 * (`sniff`, `hijack-dns`), configuration/dns (`servers` with `tag`, `address`, `detour`; `final`,
 * `strategy`), configuration/log.
 */
const singBox111 = closed({
  log: closed({
    disabled: { type: "boolean" },
    level: { enum: ["trace", "debug", "info", "warn", "error", "fatal", "panic"] },
    output: str,
    timestamp: { type: "boolean" }
  }),
  dns: closed({
    servers: {
      type: "array",
      minItems: 1,
      items: closed({ tag: str, address: str, address_resolver: str, address_strategy: str, strategy: str, detour: str, client_subnet: str }, ["address"])
    },
    rules: { type: "array" },
    final: str,
    strategy: { enum: ["prefer_ipv4", "prefer_ipv6", "ipv4_only", "ipv6_only"] },
    disable_cache: { type: "boolean" },
    disable_expire: { type: "boolean" },
    independent_cache: { type: "boolean" }
  }),
  inbounds: {
    type: "array",
    items: closed(
      {
        type: { const: "tun" },
        tag: str,
        interface_name: str,
        address: { type: "array", items: { type: "string", pattern: "/\\d+$" } },
        mtu: { type: "integer" },
        auto_route: { type: "boolean" },
        strict_route: { type: "boolean" },
        route_address: strings,
        route_exclude_address: strings,
        stack: { enum: ["system", "gvisor", "mixed"] }
      },
      ["type"]
    )
  },
  endpoints: {
    type: "array",
    minItems: 1,
    items: closed(
      {
        type: { const: "wireguard" },
        tag: str,
        system: { type: "boolean" },
        name: str,
        mtu: { type: "integer" },
        address: { type: "array", minItems: 1, items: { type: "string", pattern: "/\\d+$" } },
        private_key: { type: "string", pattern: WG_KEY },
        listen_port: port,
        peers: {
          type: "array",
          minItems: 1,
          items: closed(
            {
              address: str,
              port,
              public_key: { type: "string", pattern: WG_KEY },
              pre_shared_key: str,
              allowed_ips: { type: "array", minItems: 1, items: str },
              persistent_keepalive_interval: { type: "integer", minimum: 0 },
              reserved: { type: "array" }
            },
            ["public_key", "allowed_ips"]
          )
        },
        udp_timeout: str,
        workers: { type: "integer" }
      },
      ["type", "tag", "address", "private_key", "peers"]
    )
  },
  outbounds: {
    type: "array",
    items: {
      oneOf: [
        closed(
          {
            type: { const: "urltest" },
            tag: str,
            outbounds: { type: "array", minItems: 1, items: str },
            url: str,
            interval: { type: "string", pattern: "^\\d+(ms|s|m|h)$" },
            tolerance: { type: "integer", minimum: 0 },
            idle_timeout: str,
            interrupt_exist_connections: { type: "boolean" }
          },
          ["type", "tag", "outbounds"]
        ),
        closed({ type: { const: "direct" }, tag: str }, ["type"])
      ]
    }
  },
  route: closed({
    rules: {
      type: "array",
      items: {
        oneOf: [
          closed({ action: { const: "sniff" }, sniffer: strings, timeout: str }, ["action"]),
          closed({ protocol: { anyOf: [str, strings] }, action: { const: "hijack-dns" } }, ["action"])
        ]
      }
    },
    rule_set: { type: "array" },
    final: str,
    auto_detect_interface: { type: "boolean" }
  })
})

/**
 * mihomo's configuration, the parts this server writes (wiki.metacubex.one): config/proxies/wg
 * (`name`, `type: wireguard`, `server`, `port`, `ip`, `ipv6`, `private-key`, `public-key`,
 * `allowed-ips`, `pre-shared-key`, `reserved`, `persistent-keepalive`, `udp`, `mtu`,
 * `dialer-proxy`, `remote-dns-resolve`, `dns`), config/proxy-groups/url-test (`name`, `type`,
 * `proxies`, `url`, `interval` in seconds, `tolerance` in ms, `lazy`), the general settings
 * (`mixed-port`, `allow-lan`, `mode`, `log-level`, `ipv6`) and config/rules (`MATCH,<target>`).
 */
const mihomo = closed({
  "mixed-port": port,
  "allow-lan": { type: "boolean" },
  mode: { enum: ["rule", "global", "direct"] },
  "log-level": { enum: ["silent", "error", "warning", "info", "debug"] },
  ipv6: { type: "boolean" },
  proxies: {
    type: "array",
    minItems: 1,
    items: closed(
      {
        name: str,
        type: { const: "wireguard" },
        server: str,
        port,
        ip: { type: "string", format: "ipv4" },
        ipv6: { type: "string", format: "ipv6" },
        "private-key": { type: "string", pattern: WG_KEY },
        "public-key": { type: "string", pattern: WG_KEY },
        "allowed-ips": { type: "array", minItems: 1, items: str },
        "pre-shared-key": str,
        reserved: {},
        "persistent-keepalive": { type: "integer", minimum: 0 },
        udp: { type: "boolean" },
        mtu: { type: "integer" },
        "dialer-proxy": str,
        "remote-dns-resolve": { type: "boolean" },
        dns: strings
      },
      ["name", "type", "server", "port", "ip", "private-key", "public-key"]
    )
  },
  "proxy-groups": {
    type: "array",
    items: closed(
      {
        name: str,
        type: { const: "url-test" },
        proxies: { type: "array", minItems: 1, items: str },
        url: str,
        interval: { type: "integer", minimum: 1 },
        tolerance: { type: "integer", minimum: 0 },
        lazy: { type: "boolean" },
        timeout: { type: "integer" }
      },
      ["name", "type", "proxies"]
    )
  },
  rules: { type: "array", items: { type: "string", pattern: "^[A-Z-]+(,[^,]+)+$" } }
})

const ajv = new Ajv({ allErrors: true, formats: { ipv4: /^(\d{1,3}\.){3}\d{1,3}$/, ipv6: /^[0-9a-fA-F:]+$/ } })

describe("sing-box (1.11 format) [D122]", () => {
  test("the configuration matches the shape sing-box 1.11 documents", () => {
    const validate = ajv.compile(singBox111)
    const config = JSON.parse(singBoxJson(tunnels))
    expect(validate(config) ? [] : validate.errors).toEqual([])
  })

  test("one wireguard endpoint per server, a urltest over them that the route takes by default", () => {
    const config = singBoxConfig(tunnels)
    expect(config.endpoints.map((e) => e.tag)).toEqual(["Amsterdam 1", "Zürich #7"])
    const tags = new Set([...config.endpoints.map((e) => e.tag), ...config.outbounds.map((o) => o.tag)])
    const auto = config.outbounds.find((o) => o.type === "urltest")!
    expect(auto).toBeDefined()
    expect("outbounds" in auto && auto.outbounds).toEqual(["Amsterdam 1", "Zürich #7"])
    expect(config.route.final).toBe(auto.tag)
    // every tag named exists: the group's members, the route's default, the DNS server's detour
    expect(config.dns.servers.every((s) => tags.has(s.detour))).toBe(true)
    expect(tags.has(config.route.final)).toBe(true)
    // the device's keys and addresses, IPv6 where the server gives one
    expect(config.endpoints[0]).toMatchObject({
      private_key: tunnels[0]!.config.privateKey,
      address: ["10.66.0.2/32"],
      peers: [
        {
          address: "198.51.100.10",
          port: 51820,
          public_key: tunnels[0]!.config.serverPublicKey,
          allowed_ips: ["0.0.0.0/0", "::/0"],
          persistent_keepalive_interval: 25
        }
      ]
    })
    expect(config.endpoints[1]!.address).toEqual(["10.77.0.9/32", "fd42:66::9/128"])
    expect(config.dns.servers[0]!.address).toBe("1.1.1.1")
  })

  test("without an IPv6 address in any tunnel, DNS asks for IPv4 answers only", () => {
    expect(singBoxConfig(tunnels.slice(0, 1)).dns).toMatchObject({ strategy: "ipv4_only" })
    expect(singBoxConfig(tunnels).dns).not.toHaveProperty("strategy")
  })
})

describe("mihomo [D122]", () => {
  test("the YAML parses to the shape mihomo documents", () => {
    const validate = ajv.compile(mihomo)
    const config = parseYaml(mihomoYaml(tunnels))
    expect(validate(config) ? [] : validate.errors).toEqual([])
    expect(config).toEqual(JSON.parse(JSON.stringify(mihomoConfig(tunnels))))
  })

  test("one wireguard proxy per server, a url-test group over them that every connection takes", () => {
    const config = parseYaml(mihomoYaml(tunnels))
    expect(config.proxies.map((p: { name: string }) => p.name)).toEqual(["Amsterdam 1", "Zürich #7"])
    expect(config["proxy-groups"]).toEqual([
      { name: "Auto", type: "url-test", proxies: ["Amsterdam 1", "Zürich #7"], url: "https://www.gstatic.com/generate_204", interval: 300, tolerance: 50 }
    ])
    expect(config.rules).toEqual(["MATCH,Auto"])
    expect(config.proxies[0]).toMatchObject({
      server: "198.51.100.10",
      port: 51820,
      ip: "10.66.0.2",
      "allowed-ips": ["0.0.0.0/0", "::/0"],
      dns: ["1.1.1.1", "1.0.0.1"]
    })
    expect(config.proxies[0]).not.toHaveProperty("ipv6")
    expect(config.proxies[1]).toMatchObject({ server: "2001:db8::10", port: 443, ipv6: "fd42:66::9" })
    expect(config.ipv6).toBe(true)
  })
})

describe("the link's rules [D122]", () => {
  test("the format by User-Agent: sing-box apps, then Clash, mihomo and Stash, else wireguard", () => {
    const cases: ReadonlyArray<readonly [string | undefined, string]> = [
      ["SFA/1.11.4 (Android 14; sing-box 1.11.4)", "sing-box"],
      ["SFI/1.11.0 (iOS 18.1; sing-box 1.11.0)", "sing-box"],
      ["sing-box 1.12.1", "sing-box"],
      ["clash-verge/v2.2.3", "clash"],
      ["ClashX Pro/1.118.0", "clash"],
      ["mihomo/1.19.2", "clash"],
      ["FlClash/v0.8.80 clash-verge Platform/android", "clash"],
      ["Stash/2.7.1 Clash/1.9.0", "clash"],
      ["WireGuard/1.0.16 (iOS)", "wireguard"],
      ["curl/8.11.1", "wireguard"],
      ["", "wireguard"],
      [undefined, "wireguard"]
    ]
    for (const [agent, format] of cases) expect([agent, formatFor(agent)]).toEqual([agent, format])
  })

  test("a server's name as a file name: every character outside A-Za-z0-9._- becomes -", () => {
    expect(fileName("Amsterdam 1")).toBe("Amsterdam-1")
    expect(fileName("Zürich/α 2")).toBe("Z-rich---2")
    expect(fileName("a.b_c-D9")).toBe("a.b_c-D9")
    // one "-" per character (a code point), not per UTF-16 unit
    expect(fileName("東京 🚀")).toBe("----")
    const named = distinctNames(
      [
        { id: 1, name: "X" },
        { id: 2, name: "X" },
        { id: 3, name: "Y" }
      ],
      (s) => s.name,
      (n, id) => `${n}-${id}`
    )
    expect(named.map(([, n]) => n)).toEqual(["X", "X-2", "Y"])
  })

  test("the zip holds the files as given, and the same files make the same bytes", () => {
    const entries = [
      { name: "a.conf", text: "[Interface]\n" },
      { name: "b.ovpn", text: "client\n" }
    ]
    const zip = zipOf(entries)
    const files = unzipSync(zip)
    expect(Object.fromEntries(Object.entries(files).map(([k, v]) => [k, strFromU8(v)]))).toEqual({ "a.conf": "[Interface]\n", "b.ovpn": "client\n" })
    expect(zipOf(entries)).toEqual(zip)
  })

  test("Subscription-Userinfo and the ETag", () => {
    expect(userinfo({ upload: 1, download: 2, total: 0, expiresAt: new Date("2030-01-01T00:00:00.900Z") })).toBe(
      "upload=1; download=2; total=0; expire=1893456000"
    )
    const tag = subscriptionEtag(["text/plain", "a"])
    expect(tag).toMatch(/^"[A-Za-z0-9_-]{32}"$/)
    expect(subscriptionEtag(["text/plain", "a"])).toBe(tag)
    expect(subscriptionEtag(["text/plain", "b"])).not.toBe(tag)
    expect(subscriptionEtag(["text/plai", "na"])).not.toBe(tag)
    expect(matchesEtag(tag, tag)).toBe(true)
    expect(matchesEtag(`W/${tag}`, tag)).toBe(true)
    expect(matchesEtag(`"x", ${tag}`, tag)).toBe(true)
    expect(matchesEtag("*", tag)).toBe(true)
    expect(matchesEtag('"x"', tag)).toBe(false)
    expect(matchesEtag(undefined, tag)).toBe(false)
  })
})
