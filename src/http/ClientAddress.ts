import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isIP } from "node:net"
import { AppConfig } from "../platform/Config.ts"
import { MAX_USER_AGENT, requestOrigin } from "../platform/RequestOrigin.ts"

/** The eight 16-bit groups of an IPv6 address (`isIP` said it is one). */
const ipv6Groups = (address: string): ReadonlyArray<number> => {
  const parse = (part: string): Array<number> => {
    if (part === "") return []
    return part.split(":").flatMap((group) => {
      if (!group.includes(".")) return [parseInt(group, 16)]
      const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number]
      return [(a << 8) | b, (c << 8) | d]
    })
  }
  const [head = "", tail] = address.split("::")
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...Array<number>(Math.max(0, 8 - left.length - right.length)).fill(0), ...right]
}

/**
 * The address a limit counts ([D30] rev. 2): an IPv4 address as is (also when written
 * IPv4-mapped), an IPv6 client as its /64 (one host holds a whole /64), anything that is not
 * an address as `unknown`.
 */
export const limitAddress = (address: string): string => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const version = isIP(bare)
  if (version === 4) return bare
  if (version !== 6) return "unknown"
  const groups = ipv6Groups(bare.split("%")[0]!)
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff
  if (mapped) return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`
}

/**
 * The client's address as `TRUST_PROXY` says ([D1] rev. 2): without trusted proxies, the
 * socket's; behind N, the N-th entry of `X-Forwarded-For` counted from the right, the one the
 * nearest trusted proxy appended. Entries left of it were written by the client and are never
 * read; a header too short for N proxies did not come through them: the socket's address.
 */
export const clientIp = (request: HttpServerRequest.HttpServerRequest, trustProxy: false | number): string =>
  clientIpOf(socketAddress(request), request.headers["x-forwarded-for"], trustProxy)

/** The socket's address ("unknown" where the server gives none, as for an in-process handler). */
const socketAddress = (request: HttpServerRequest.HttpServerRequest): string => {
  try {
    return Option.getOrElse(request.remoteAddress, () => "unknown")
  } catch {
    return "unknown"
  }
}

/** `clientIp` from its parts: the socket's address and the `X-Forwarded-For` header. */
export const clientIpOf = (socket: string, header: string | null | undefined, trustProxy: false | number): string => {
  if (trustProxy === false || header === undefined || header === null) return socket
  const entries = header.split(",").map((entry) => entry.trim())
  const entry = entries.length >= trustProxy ? entries[entries.length - trustProxy]! : ""
  return isIP(entry.startsWith("[") && entry.endsWith("]") ? entry.slice(1, -1) : entry) === 0 ? socket : entry
}

/** Whether an address is this machine's: 127.0.0.0/8, `::1`, or 127.x written IPv4-mapped. */
export const isLoopback = (address: string): boolean => {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address
  const version = isIP(bare)
  if (version === 4) return bare.startsWith("127.")
  if (version !== 6) return false
  const groups = ipv6Groups(bare.split("%")[0]!)
  if (groups.slice(0, 7).every((g) => g === 0)) return groups[7] === 1
  return groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff && groups[6]! >> 8 === 127
}

/** The client address for limits: `clientIp`, an IPv6 client as its /64. */
export const clientAddress = Effect.gen(function* () {
  return yield* clientAddressWith(yield* AppConfig)
})

export const clientAddressWith = (config: AppConfig["Type"]) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => limitAddress(clientIp(request, config.trustProxy)))

/**
 * Every request's origin for the rooms that record it ([D99], [D100]): the client address as
 * `TRUST_PROXY` reads it (an IPv6 client whole, not its /64) and the user agent, cut to 255.
 */
export const withRequestOrigin =
  (config: AppConfig["Type"]) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const agent = request.headers["user-agent"]
      const ip = clientIp(request, config.trustProxy)
      return Effect.locally(app, requestOrigin, {
        ip: ip === "unknown" ? null : ip,
        userAgent: agent === undefined || agent === "" ? null : [...agent].slice(0, MAX_USER_AGENT).join("")
      })
    })
