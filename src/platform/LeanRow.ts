import * as Schema from "effect/Schema"

/**
 * Issue 27: a row schema checked by one plain predicate, for statements that read thousands of
 * rows a request (the full node list): a `Schema.Struct` decode makes a parse result per field,
 * this one check (about seven times cheaper: docs/benchmarks.md, "Figures behind the code"). It decodes nothing: every
 * field must already be what its kind says (`int`: a safe integer, as `Schema.Int`; `date`: a
 * `Date`, as `Schema.DateFromSelf`; `?` kinds: or null, as `Schema.NullOr`), else the row fails
 * to decode like a struct's would. Other columns the row carries are passed through.
 */
export type LeanKind = "int" | "string" | "boolean" | "date" | "int?" | "string?"

type Of<K extends LeanKind> = K extends "int"
  ? number
  : K extends "string"
    ? string
    : K extends "boolean"
      ? boolean
      : K extends "date"
        ? Date
        : K extends "int?"
          ? number | null
          : string | null

const checks: { readonly [K in LeanKind]: (u: unknown) => boolean } = {
  int: (u) => Number.isSafeInteger(u),
  string: (u) => typeof u === "string",
  boolean: (u) => typeof u === "boolean",
  date: (u) => u instanceof Date,
  "int?": (u) => u === null || Number.isSafeInteger(u),
  "string?": (u) => u === null || typeof u === "string"
}

export const leanRow = <const F extends Readonly<Record<string, LeanKind>>>(identifier: string, fields: F) => {
  const list = Object.entries(fields).map(([name, kind]) => [name, checks[kind]] as const)
  type Row = { readonly [N in keyof F]: Of<F[N]> }
  const isRow = (u: unknown): u is Row => {
    if (typeof u !== "object" || u === null) return false
    const row = u as Record<string, unknown>
    for (const [name, check] of list) if (!check(row[name])) return false
    return true
  }
  return Schema.declare(isRow, { identifier })
}
