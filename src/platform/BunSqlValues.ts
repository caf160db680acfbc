import type { SQL } from "bun"

/**
 * What `BunSqlClient.ts` sends and receives, as the `pg` client does (see its header): parameters
 * as `pg` sends them, int8 and integer arrays back as numbers.
 */

// ---- parameters ------------------------------------------------------------------------------

/** per statement text: the 0-based indexes of parameters cast to json/jsonb (`$2::jsonb`) */
const jsonParamsByText = new Map<string, ReadonlyArray<number>>()
const JSON_CAST = /\$(\d+)::jsonb?\b/g

const jsonParams = (text: string): ReadonlyArray<number> => {
  let indexes = jsonParamsByText.get(text)
  if (indexes === undefined) {
    indexes = [...text.matchAll(JSON_CAST)].map((m) => Number(m[1]) - 1)
    if (jsonParamsByText.size < 2000) jsonParamsByText.set(text, indexes)
  }
  return indexes
}

export const toParams = (db: SQL, text: string, params: ReadonlyArray<unknown>, prepare: boolean): Array<unknown> => {
  const out = new Array<unknown>(params.length)
  for (let i = 0; i < params.length; i++) {
    const value = params[i]
    switch (typeof value) {
      case "number":
      case "bigint":
        out[i] = String(value)
        break
      case "boolean":
        out[i] = value ? "true" : "false"
        break
      case "undefined":
        out[i] = null
        break
      default:
        out[i] = value
    }
  }
  // only prepared statements make Bun encode a string for a jsonb parameter as a JSON string
  if (prepare && text.includes("::json")) {
    for (const i of jsonParams(text)) {
      const value = out[i]
      if (typeof value === "string") {
        try {
          out[i] = db.json(JSON.parse(value))
        } catch {
          // not JSON: the server refuses it as pg's text would be refused (22P02)
          out[i] = db.json(value)
        }
      }
    }
  }
  return out
}

// ---- results ---------------------------------------------------------------------------------

const INT8 = 20
/** int2[], int4[], int8[]; also float4[]/float8[], which Bun may return as typed arrays */
const NUMBER_ARRAYS = new Set([1005, 1007, 1016, 1021, 1022])

/**
 * What to convert in the rows of one statement: the column names (object rows) and indexes
 * (value rows) of int8 columns and number-array columns. `undefined`: nothing to convert.
 */
interface Plan {
  readonly int8Names: ReadonlyArray<string>
  readonly int8Indexes: ReadonlyArray<number>
  readonly arrayNames: ReadonlyArray<string>
  readonly arrayIndexes: ReadonlyArray<number>
}

const planOf = (columns: ReadonlyArray<SQL.ResultColumn> | null | undefined): Plan | undefined => {
  if (!columns) return undefined
  let plan: { int8Names: Array<string>; int8Indexes: Array<number>; arrayNames: Array<string>; arrayIndexes: Array<number> } | undefined
  for (let i = 0; i < columns.length; i++) {
    const type = columns[i]!.type
    if (type === INT8) {
      plan ??= { int8Names: [], int8Indexes: [], arrayNames: [], arrayIndexes: [] }
      plan.int8Names.push(columns[i]!.name)
      plan.int8Indexes.push(i)
    } else if (NUMBER_ARRAYS.has(type)) {
      plan ??= { int8Names: [], int8Indexes: [], arrayNames: [], arrayIndexes: [] }
      plan.arrayNames.push(columns[i]!.name)
      plan.arrayIndexes.push(i)
    }
  }
  return plan
}

/** plans of prepared statements: Bun gives the runs of one statement on one connection one object */
const plans = new WeakMap<object, Plan | null>()

const toNumber = (value: unknown) => (typeof value === "string" ? Number(value) : value)
const toNumberArray = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number>)
  if (Array.isArray(value)) return value.map((v) => (Array.isArray(v) || ArrayBuffer.isView(v) ? toNumberArray(v) : toNumber(v)))
  return value
}

type Row = Record<string, unknown>
export type BunResult = Array<Row> & Partial<SQL.ResultMetadata>

const convert = (result: BunResult, values: boolean): Array<Row> => {
  const statement = result.statement
  let plan: Plan | undefined
  if (statement) {
    const known = plans.get(statement)
    if (known === undefined) {
      plan = planOf(result.columns)
      plans.set(statement, plan ?? null)
    } else {
      plan = known ?? undefined
    }
  } else {
    plan = planOf(result.columns)
  }
  if (plan === undefined || result.length === 0) return result
  const names = values ? plan.int8Indexes : plan.int8Names
  const arrays = values ? plan.arrayIndexes : plan.arrayNames
  for (const row of result) {
    for (let c = 0; c < names.length; c++) {
      const key = names[c]!
      const value = row[key]
      if (typeof value === "string") row[key] = Number(value)
    }
    for (let c = 0; c < arrays.length; c++) {
      const key = arrays[c]!
      row[key] = toNumberArray(row[key])
    }
  }
  return result
}

/** one result, or the results of several statements (a parameterless multi-statement text) */
export const convertAny = (result: BunResult, values: boolean): ReadonlyArray<object> =>
  result.columns === undefined && result.length > 0 && Array.isArray(result[0])
    ? // Bun answers a multi-statement text with one result per statement, each an array of rows
      (result as unknown as ReadonlyArray<BunResult>).map((inner) => convert(inner, values))
    : convert(result, values)
