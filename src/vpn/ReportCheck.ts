import type { FieldErrors } from "../platform/Errors.ts"
import * as Bandwidth from "./Bandwidth.ts"

/* A node's usage report as it arrives ([D54] deltas, [D94] totals): its check, field by field. */

const MAX_BYTES = Bandwidth.MAX_BYTES
const MAX_BIG = BigInt(MAX_BYTES)

/** The counters a report carries: deltas ([D54]) or cumulative totals ([D94]). */
export type CounterFields = readonly ["rx_bytes", "tx_bytes"] | readonly ["rx_total", "tx_total"]
export const DELTAS: CounterFields = ["rx_bytes", "tx_bytes"]
export const TOTALS: CounterFields = ["rx_total", "tx_total"]

/** One entry of a node's report: a WireGuard peer (`public_key`) or an OpenVPN user (`username`). */
export interface ReportEntry {
  readonly public_key?: string
  readonly username?: string
  readonly rx: number
  readonly tx: number
}

/** One report at most this long (a node sends one entry per active peer, in batches). */
export const MAX_USAGE_ENTRIES = 10_000

export const pastMax = (field: string) => `The ${field} field would carry the usage total past ${MAX_BYTES} bytes.`

/**
 * Field errors of a node's report, keyed `<index>.<field>` as Laravel does for arrays. With
 * `distinct` (cumulative counters) a peer may appear once per report: two totals of one peer
 * in one report would leave its increase ambiguous.
 */
export const checkReport = (
  entries: ReadonlyArray<unknown>,
  fields: CounterFields,
  distinct: boolean
): { readonly entries: ReadonlyArray<ReportEntry>; readonly errors: FieldErrors } => {
  const errors: Record<string, Array<string>> = {}
  const out: Array<ReportEntry> = []
  const seen = new Set<string>()
  const add = (key: string, text: string) => (errors[key] ??= []).push(text)
  if (entries.length > MAX_USAGE_ENTRIES) {
    add("body", `The body must not have more than ${MAX_USAGE_ENTRIES} items.`)
    return { entries: [], errors }
  }
  entries.forEach((raw, i) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      add(`${i}`, `The ${i} field must be an object.`)
      return
    }
    const e = raw as Record<string, unknown>
    const counter = (field: string) => {
      const v = e[field]
      if (v === undefined || v === null) add(`${i}.${field}`, `The ${i}.${field} field is required.`)
      else if (typeof v !== "number" || !Number.isInteger(v)) add(`${i}.${field}`, `The ${i}.${field} field must be an integer.`)
      else if (v < 0) add(`${i}.${field}`, `The ${i}.${field} field must be at least 0.`)
      else if (v > MAX_BYTES) add(`${i}.${field}`, `The ${i}.${field} field must not be greater than ${MAX_BYTES}.`)
      else return v
      return 0
    }
    const rx = counter(fields[0])
    const tx = counter(fields[1])
    const key = e["public_key"]
    const user = e["username"]
    const present = (v: unknown) => v !== undefined && v !== null
    if (!present(key) && !present(user)) {
      add(`${i}.public_key`, `The ${i}.public_key field is required when ${i}.username is not present.`)
    } else if (present(key) && present(user)) {
      add(`${i}.public_key`, `The ${i}.public_key field prohibits ${i}.username from being present.`)
    } else if (present(key) && (typeof key !== "string" || key.length === 0 || key.length > 255)) {
      add(`${i}.public_key`, `The ${i}.public_key field must be a string.`)
    } else if (present(user) && (typeof user !== "string" || user.length === 0 || user.length > 255)) {
      add(`${i}.username`, `The ${i}.username field must be a string.`)
    } else if (distinct) {
      const [field, value] = typeof key === "string" ? (["public_key", key] as const) : (["username", String(user)] as const)
      if (seen.has(`${field}:${value}`)) add(`${i}.${field}`, `The ${i}.${field} field has a duplicate value.`)
      seen.add(`${field}:${value}`)
    }
    out.push({
      ...(typeof key === "string" ? { public_key: key } : {}),
      ...(typeof user === "string" ? { username: user } : {}),
      rx,
      tx
    })
  })
  return { entries: out, errors }
}

/** What one entry of a report adds to its owner's month, `index` its place in the report. */
export interface Addition {
  readonly index: number
  readonly owner: number
  readonly rx: number
  readonly tx: number
}

/** The counter (`<index>.rx_bytes`, `.tx_total`, ...) whose addition first carries `start` past 2^53 - 1, in report order. */
export const firstPastMax = (start: number, additions: ReadonlyArray<Addition>, fields: CounterFields): string | undefined => {
  let total = BigInt(start)
  for (const a of additions) {
    total += BigInt(a.rx)
    if (total > MAX_BIG) return `${a.index}.${fields[0]}`
    total += BigInt(a.tx)
    if (total > MAX_BIG) return `${a.index}.${fields[1]}`
  }
  return undefined
}
