import type { TestApp } from "../support/app.ts"

/** The operations the service documents in its own /v1/openapi.json (suites 2 and 3). */

export type Json = Record<string, unknown>
export const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v)

export interface PathParam {
  readonly name: string
  /** an integer id (`IdParam`) rather than a uuid */
  readonly numeric: boolean
}

export interface Operation {
  readonly method: string
  /** with `{param}` placeholders, as documented */
  readonly path: string
  readonly params: ReadonlyArray<PathParam>
  readonly query: ReadonlyArray<string>
  /** the resolved JSON schema of the body, if any */
  readonly body: Json | undefined
  /** `admin` under /v1/admin, `node` under /v1/node, `user` for other routes with a bearer token, `public` otherwise */
  readonly kind: "admin" | "node" | "user" | "public"
}

export const resolve = (doc: Json, schema: unknown): Json => {
  let s = schema
  for (let i = 0; i < 20 && isObject(s) && typeof s["$ref"] === "string"; i++) {
    const name = (s["$ref"] as string).split("/").pop()!
    s = ((doc["components"] as Json)["schemas"] as Json)[name]
  }
  return isObject(s) ? s : {}
}

export const loadOperations = async (app: TestApp) => {
  const res = await app.get("/v1/openapi.json")
  if (res.status !== 200) throw new Error(`openapi.json: ${res.status}`)
  const doc = res.body as Json
  const operations: Array<Operation> = []
  for (const [path, item] of Object.entries(doc["paths"] as Json)) {
    for (const [method, raw] of Object.entries(item as Json)) {
      if (!isObject(raw)) continue
      const parameters = Array.isArray(raw["parameters"]) ? (raw["parameters"] as Array<Json>) : []
      const params = parameters
        .filter((p) => p["in"] === "path")
        .map((p) => {
          const schema = resolve(doc, p["schema"])
          const text = JSON.stringify(schema) + String(p["description"] ?? "")
          return { name: String(p["name"]), numeric: /number|integer/i.test(text) && !/uuid/i.test(text) }
        })
      const query = parameters.filter((p) => p["in"] === "query").map((p) => String(p["name"]))
      const content = isObject(raw["requestBody"]) ? ((raw["requestBody"] as Json)["content"] as Json | undefined) : undefined
      const body = content && isObject(content["application/json"]) ? resolve(doc, (content["application/json"] as Json)["schema"]) : undefined
      const secured = Array.isArray(raw["security"]) && (raw["security"] as Array<unknown>).length > 0
      const kind = path.startsWith("/v1/admin/") ? "admin" : path.startsWith("/v1/node/") ? "node" : secured ? "user" : "public"
      operations.push({ method: method.toUpperCase(), path, params, query, body, kind })
    }
  }
  return { doc, operations }
}

/** A plausible valid value for a schema: the first enum member, 1 for numbers, a short string. */
export const sampleValue = (doc: Json, raw: unknown, depth = 0): unknown => {
  const schema = resolve(doc, raw)
  const alternatives = (schema["anyOf"] ?? schema["oneOf"]) as Array<unknown> | undefined
  if (alternatives && alternatives.length > 0) {
    const nonNull = alternatives.find((a) => resolve(doc, a)["type"] !== "null") ?? alternatives[0]
    return sampleValue(doc, nonNull, depth + 1)
  }
  if (Array.isArray(schema["enum"])) return (schema["enum"] as Array<unknown>)[0]
  switch (schema["type"]) {
    case "string":
      return typeof schema["minLength"] === "number" && schema["minLength"] > 12 ? "x".repeat(schema["minLength"]) : "Access check"
    case "integer":
    case "number":
      return typeof schema["minimum"] === "number" ? Math.max(1, schema["minimum"]) : 1
    case "boolean":
      return false
    case "null":
      return null
    case "array":
      return []
    case "object": {
      if (depth > 4) return {}
      const out: Json = {}
      const properties = isObject(schema["properties"]) ? schema["properties"] : {}
      const required = new Set(Array.isArray(schema["required"]) ? (schema["required"] as Array<string>) : [])
      for (const [key, value] of Object.entries(properties)) if (required.has(key)) out[key] = sampleValue(doc, value, depth + 1)
      return out
    }
    default:
      return "Access check"
  }
}

export const fill = (path: string, values: Record<string, string>) => path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? "1")
