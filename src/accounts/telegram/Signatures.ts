import { createHash, createHmac } from "node:crypto"
import { constantTimeEqual } from "../../platform/Crypto.ts"

/**
 * The two ways Telegram signs who a user is ([D125]), checked as Telegram documents them.
 *
 * Login Widget ("Checking authorization"): the data-check-string is `key=value` of every field
 * received but `hash`, sorted by key, joined by `\n`; the hash is the hex HMAC-SHA-256 of that
 * string keyed by SHA-256 of the bot token. Only the widget's own fields are in it: our `otp` and
 * `recovery_code` travel beside them and are never signed.
 *
 * Mini App ("Validating data received via the Mini App"): `initData` is a query string; the
 * data-check-string is every pair but `hash`, URL-decoded, sorted by key, `key=value` joined by
 * `\n`; the secret is HMAC-SHA-256 of the bot token keyed by the constant `WebAppData`, and the
 * hash the hex HMAC-SHA-256 of the string keyed by that secret.
 */

/** the Login Widget's fields, the only ones its data-check-string holds */
export const WIDGET_FIELDS = ["auth_date", "first_name", "id", "last_name", "photo_url", "username"] as const
export type WidgetField = (typeof WIDGET_FIELDS)[number]

const HEX_HASH = /^[0-9a-f]{64}$/

const matches = (expected: string, given: string) => {
  const lower = given.toLowerCase()
  return HEX_HASH.test(lower) && constantTimeEqual(expected, lower)
}

/** Whether the widget's `hash` signs these fields (absent ones are left out of the string). */
export const widgetSigned = (botToken: string, fields: Partial<Record<WidgetField, string>>, hash: string): boolean => {
  const check = WIDGET_FIELDS.flatMap((key) => (fields[key] === undefined ? [] : [`${key}=${fields[key]}`])).join("\n")
  const secret = createHash("sha256").update(botToken).digest()
  return matches(createHmac("sha256", secret).update(check).digest("hex"), hash)
}

/** `initData` taken apart: its pairs (each key once), or none when it is not a query string of unique keys with one hash */
export const parseInitData = (initData: string): Map<string, string> | undefined => {
  const pairs = new Map<string, string>()
  for (const [key, value] of new URLSearchParams(initData)) {
    if (pairs.has(key)) return undefined
    pairs.set(key, value)
  }
  return pairs.has("hash") ? pairs : undefined
}

/** Whether the Mini App's `hash` signs the other pairs of `initData`. */
export const initDataSigned = (botToken: string, pairs: ReadonlyMap<string, string>): boolean => {
  const hash = pairs.get("hash")
  if (hash === undefined) return false
  const check = [...pairs.entries()]
    .filter(([key]) => key !== "hash")
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join("\n")
  const secret = createHmac("sha256", "WebAppData").update(botToken).digest()
  return matches(createHmac("sha256", secret).update(check).digest("hex"), hash)
}
