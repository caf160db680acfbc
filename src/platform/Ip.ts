/**
 * `isIP` of `node:net` without `node:net` (issue 34): the contract's schemas validate addresses
 * with it, and the typed client carries them to runtimes that have no `node:net`. The same
 * grammar as Node's own (`lib/internal/net.js`): dotted-decimal IPv4 without leading zeros, and
 * IPv6 with an optional embedded IPv4 tail and zone id.
 */
const v4Seg = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
const v4Str = `(?:${v4Seg}\\.){3}${v4Seg}`
const IPV4 = new RegExp(`^${v4Str}$`)
const v6Seg = "(?:[0-9a-fA-F]{1,4})"
const IPV6 = new RegExp(
  "^(?:" +
    `(?:${v6Seg}:){7}(?:${v6Seg}|:)|` +
    `(?:${v6Seg}:){6}(?:${v4Str}|:${v6Seg}|:)|` +
    `(?:${v6Seg}:){5}(?::${v4Str}|(?::${v6Seg}){1,2}|:)|` +
    `(?:${v6Seg}:){4}(?:(?::${v6Seg}){0,1}:${v4Str}|(?::${v6Seg}){1,3}|:)|` +
    `(?:${v6Seg}:){3}(?:(?::${v6Seg}){0,2}:${v4Str}|(?::${v6Seg}){1,4}|:)|` +
    `(?:${v6Seg}:){2}(?:(?::${v6Seg}){0,3}:${v4Str}|(?::${v6Seg}){1,5}|:)|` +
    `(?:${v6Seg}:){1}(?:(?::${v6Seg}){0,4}:${v4Str}|(?::${v6Seg}){1,6}|:)|` +
    `(?::(?:(?::${v6Seg}){0,5}:${v4Str}|(?::${v6Seg}){1,7}|:))` +
    ")(?:%[0-9a-zA-Z-.:]{1,})?$"
)

export const isIPv4 = (s: string): boolean => IPV4.test(s)
export const isIPv6 = (s: string): boolean => IPV6.test(s)

/** 4 or 6 for an address of that family, else 0. */
export const isIP = (s: string): 0 | 4 | 6 => (isIPv4(s) ? 4 : isIPv6(s) ? 6 : 0)
