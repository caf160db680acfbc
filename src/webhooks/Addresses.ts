import { lookup } from "node:dns/promises"
import { isIP } from "node:net"

/**
 * The address rules of [D101] (SSRF): a webhook never reaches a loopback, private, link-local,
 * unique-local, shared (CGNAT) or unspecified address unless `WEBHOOKS_ALLOW_PRIVATE=true`. Checked
 * on the addresses a name resolves to, at create/update time and again at send time, where the
 * request then goes to the checked address itself (no second lookup a rebinding DNS could answer).
 */

/** IPv4 ranges no webhook may reach (multicast and reserved too) */
const BLOCKED_V4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
]

/** IPv6 ranges: unspecified, loopback, unique-local, link-local, site-local, multicast */
const BLOCKED_V6: ReadonlyArray<readonly [string, number]> = [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8]
]

const v4ToBigInt = (address: string): bigint => address.split(".").reduce((acc, part) => (acc << 8n) + BigInt(Number(part)), 0n)

/** an IPv6 address (maybe with an embedded dotted IPv4 tail) as a 128-bit number */
const v6ToBigInt = (address: string): bigint => {
  let text = address.toLowerCase().split("%")[0]!
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const v4 = v4ToBigInt(dotted[1]!)
    text = `${text.slice(0, -dotted[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? (text.split("::", 2) as [string, string]) : [text, undefined]
  const headParts = head === "" ? [] : head.split(":")
  const tailParts = tail === undefined || tail === "" ? [] : tail.split(":")
  const missing = 8 - headParts.length - tailParts.length
  const parts = tail === undefined ? headParts : [...headParts, ...Array<string>(missing).fill("0"), ...tailParts]
  return parts.reduce((acc, part) => (acc << 16n) + BigInt(parseInt(part || "0", 16)), 0n)
}

const inRange = (value: bigint, base: bigint, prefix: number, bits: number) => {
  const shift = BigInt(bits - prefix)
  return value >> shift === base >> shift
}

const blockedV4 = (address: string) => {
  const value = v4ToBigInt(address)
  return BLOCKED_V4.some(([base, prefix]) => inRange(value, v4ToBigInt(base), prefix, 32))
}

const dottedOf = (v4: bigint) => [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join(".")
const MASK32 = 0xffffffffn

/**
 * [D117]: the IPv4 addresses an IPv6 address carries, by the forms that reach an IPv4 host:
 * IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96`, IPv4-compatible `::/96`,
 * 6to4 `2002::/16` (bits 16-47), NAT64 `64:ff9b::/96` and the local-use `64:ff9b:1::/48` (RFC
 * 8215: each RFC 6052 position, /48 to /96, that holds a non-zero address with a zero suffix),
 * Teredo `2001::/32` (the server in bits 32-63, the client inverted in the last 32).
 */
export const embeddedV4 = (value: bigint): ReadonlyArray<string> => {
  const high96 = value >> 32n
  const low = value & MASK32
  if (high96 === 0xffffn || high96 === 0xffff0000n) return [dottedOf(low)]
  // ::a.b.c.d; `::` and `::1` are IPv6's own (unspecified, loopback)
  if (high96 === 0n) return value > 1n ? [dottedOf(low)] : []
  if (value >> 112n === 0x2002n) return [dottedOf((value >> 80n) & MASK32)]
  if (high96 === 0x64ff9b0000000000000000n) return [dottedOf(low)]
  if (value >> 80n === 0x64ff9b0001n) {
    const octets = value
      .toString(16)
      .padStart(32, "0")
      .match(/../g)!
      .map((h) => BigInt(parseInt(h, 16)))
    // RFC 6052 positions of the /48, /56 and /64 forms (the u octet, 8, skipped); each holds an
    // address only when the suffix after it is zero and it is not all zero itself
    const form = (indexes: ReadonlyArray<number>) =>
      octets.slice(indexes.at(-1)! + 1).every((o) => o === 0n) ? indexes.reduce((acc, i) => (acc << 8n) + octets[i]!, 0n) : 0n
    const forms = [form([6, 7, 9, 10]), form([7, 9, 10, 11]), form([9, 10, 11, 12]), low].filter((v4) => v4 !== 0n)
    return forms.length === 0 ? [dottedOf(0n)] : forms.map(dottedOf)
  }
  if (value >> 96n === 0x20010000n) return [dottedOf((value >> 64n) & MASK32), dottedOf(low ^ MASK32)]
  return []
}

/** `true` for an address no webhook may reach without `WEBHOOKS_ALLOW_PRIVATE` (IPv6 judged by the IPv4 it carries too) */
export const isPrivateAddress = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const family = isIP(bare)
  if (family === 4) return blockedV4(bare)
  if (family !== 6) return true
  const value = v6ToBigInt(bare)
  if (embeddedV4(value).some(blockedV4)) return true
  return BLOCKED_V6.some(([base, prefix]) => inRange(value, v6ToBigInt(base), prefix, 128))
}

export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/** the host of a URL without IPv6 brackets or a final dot (`localhost.` is `localhost`) */
export const bareHost = (url: URL) => {
  const host = url.hostname.startsWith("[") && url.hostname.endsWith("]") ? url.hostname.slice(1, -1) : url.hostname
  return host.endsWith(".") ? host.slice(0, -1) : host
}

/** every address the URL's host stands for: itself when it is an address, else the DNS answers */
export const resolveHost = async (host: string, timeoutMs = 5_000): Promise<ReadonlyArray<ResolvedAddress>> => {
  const family = isIP(host)
  if (family === 4 || family === 6) return [{ address: host, family }]
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} timed out`)), timeoutMs)
  })
  try {
    const answers = await Promise.race([lookup(host, { all: true, verbatim: true }), timeout])
    return answers.flatMap((a) => (a.family === 4 || a.family === 6 ? [{ address: a.address, family: a.family }] : []))
  } finally {
    clearTimeout(timer)
  }
}

/** What the URL rules say about a URL before anything is resolved: a message for `errors.url`, or none. */
export const urlShapeProblem = (raw: string, allowPrivate: boolean): string | undefined => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return "The url field must be a valid URL."
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "The url field must be an https:// URL."
  if (url.username !== "" || url.password !== "") return "The url field must not carry credentials."
  if (url.hash !== "") return "The url field must not carry a fragment."
  const host = bareHost(url)
  if (host === "") return "The url field must be a valid URL."
  if (url.protocol === "http:" && !allowPrivate) return "The url field must be an https:// URL."
  // an address written in the URL is judged at once
  if (isIP(host) !== 0) {
    if (!allowPrivate && isPrivateAddress(host)) return "The url field must not point to a private, loopback or link-local address."
    if (url.protocol === "http:" && !isPrivateAddress(host)) return "The url field must be an https:// URL."
  }
  if (!allowPrivate && (host === "localhost" || host.endsWith(".localhost"))) {
    return "The url field must not point to a private, loopback or link-local address."
  }
  return undefined
}

/**
 * The addresses a request to this URL may go to, or why none may: every resolved address must be
 * allowed (one private answer among public ones refuses the name: a rebinding resolver could
 * otherwise pick it). `http://` only to loopback/private addresses, and only when they are allowed.
 */
export const checkAddresses = (
  url: URL,
  addresses: ReadonlyArray<ResolvedAddress>,
  allowPrivate: boolean
): { readonly ok: true; readonly address: ResolvedAddress } | { readonly ok: false; readonly reason: string } => {
  if (addresses.length === 0) return { ok: false, reason: "The url host does not resolve." }
  const anyPrivate = addresses.some((a) => isPrivateAddress(a.address))
  if (anyPrivate && !allowPrivate) {
    return { ok: false, reason: "The url field must not point to a private, loopback or link-local address." }
  }
  if (url.protocol === "http:" && (!allowPrivate || addresses.some((a) => !isPrivateAddress(a.address)))) {
    return { ok: false, reason: "The url field must be an https:// URL." }
  }
  return { ok: true, address: addresses[0]! }
}
