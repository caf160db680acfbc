/**
 * The OpenAPI document as a test reads it: its operations, a request built from each operation's
 * own schemas (openapi-sampler), and an Ajv 2020 validator for its responses (issue 28).
 */
import Ajv2020 from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { sample } from "openapi-sampler"

export type Json = Record<string, unknown>
export const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

export interface Operation {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly op: Json
  /** the scheme names of the operation's security ("" for none) */
  readonly credentials: ReadonlyArray<string>
  readonly pathParams: ReadonlyArray<string>
  readonly bodySchema: Json | undefined
}

export const operationsOf = (doc: Json): Array<Operation> => {
  const out: Array<Operation> = []
  for (const [path, item] of Object.entries(doc["paths"] as Json)) {
    if (!isObject(item)) continue
    for (const [method, op] of Object.entries(item)) {
      if (!isObject(op)) continue
      const security = Array.isArray(op["security"]) ? op["security"].filter(isObject) : []
      const parameters = Array.isArray(op["parameters"]) ? op["parameters"].filter(isObject) : []
      const body = isObject(op["requestBody"]) && isObject(op["requestBody"]["content"]) ? op["requestBody"]["content"]["application/json"] : undefined
      out.push({
        id: String(op["operationId"]),
        method: method.toUpperCase(),
        path,
        op,
        credentials: security.flatMap((s) => Object.keys(s)),
        pathParams: parameters.filter((p) => p["in"] === "path").map((p) => String(p["name"])),
        bodySchema: isObject(body) && isObject(body["schema"]) ? body["schema"] : undefined
      })
    }
  }
  return out
}

/** A schema with its `$ref`s resolved one level (enough to read `required` and `properties`). */
export const resolve = (doc: Json, schema: Json): Json => {
  const ref = schema["$ref"]
  if (typeof ref !== "string") return schema
  const name = ref.split("/").at(-1) ?? ""
  const schemas = (doc["components"] as Json)["schemas"] as Json
  return resolve(doc, schemas[name] as Json)
}

/** An example body that the document calls valid, from the schema alone. */
export const sampleBody = (doc: Json, schema: Json): unknown =>
  sample(schema as never, { skipReadOnly: true, skipNonRequired: false, quiet: true } as never, doc as never)

export const requiredFields = (doc: Json, schema: Json): ReadonlyArray<string> => {
  const resolved = resolve(doc, schema)
  return Array.isArray(resolved["required"]) ? resolved["required"].map(String) : []
}

export const propertiesOf = (doc: Json, schema: Json): Json => {
  const resolved = resolve(doc, schema)
  return isObject(resolved["properties"]) ? resolved["properties"] : {}
}

export const makeResponseValidator = (doc: Json) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema({ $id: "doc", components: doc["components"] } as never)
  const cache = new Map<string, ReturnType<typeof ajv.compile>>()
  /** errors of `body` against the response schema of `op` for `status` (undefined: not declared) */
  return (op: Json, status: number, contentType: string, body: unknown): ReadonlyArray<string> | undefined => {
    const responses = op["responses"] as Json
    const declared = responses[String(status)]
    if (!isObject(declared)) return undefined
    const content = isObject(declared["content"]) ? declared["content"] : undefined
    if (content === undefined) return []
    const type = Object.keys(content).find((t) => contentType.startsWith(t.split(";")[0]!))
    if (type === undefined) return [`content type ${contentType} not declared (${Object.keys(content).join(", ")})`]
    if (!type.startsWith("application/json")) return []
    const schema = (content[type] as Json)["schema"]
    const key = JSON.stringify(schema)
    let validate = cache.get(key)
    if (validate === undefined) {
      validate = ajv.compile(JSON.parse(key.replaceAll('"#/components/', '"doc#/components/')))
      cache.set(key, validate)
    }
    return validate(body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`)
  }
}
