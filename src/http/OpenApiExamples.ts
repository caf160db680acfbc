/**
 * A request example the API accepts, for every request body of the OpenAPI document (issue 34):
 * `/docs`' "Try it out" sends the media type's `example` as it is, and a body made up from the
 * schema alone ("string" for a password of 8 or more characters) was refused. Built from each
 * schema (its `examples`, enum, bounds), with the values of the fields whose meaning a schema
 * cannot say. The contract test sends each example and checks that none is refused for its shape.
 */
type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const PASSWORD = "Correct-Horse-Battery-9"

/** fields whose value a schema cannot tell (ids name the first of each, as on a fresh server) */
const BY_NAME: Record<string, unknown> = {
  name: "Example",
  email: "user@example.com",
  password: PASSWORD,
  password_confirmation: PASSWORD,
  current_password: PASSWORD,
  code: "123456",
  token: "the-token-from-the-e-mail",
  public_key: "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=",
  url: "https://example.com/hooks/vpn",
  currency: "USD",
  country: "NL",
  city: "Amsterdam",
  subject: "Cannot connect",
  message: "My laptop has not connected since this morning.",
  question: "Which protocols do you offer?",
  answer: "WireGuard and OpenVPN.",
  reason: "Goodwill credit",
  plan_id: 1,
  cycle_id: 1,
  plan_ids: [1],
  starts_at: "2026-01-01T00:00:00Z",
  expires_at: "2027-01-01T00:00:00Z"
}

const resolve = (schema: unknown, components: Json, depth = 0): Json | undefined => {
  if (!isObject(schema) || depth > 20) return undefined
  const ref = schema["$ref"]
  if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
    return resolve(components[ref.slice("#/components/schemas/".length)], components, depth + 1)
  }
  return schema
}

const NO_VALUE = Symbol("no value")

const stringOf = (schema: Json): string => {
  if (schema["format"] === "date-time") return "2026-01-01T00:00:00Z"
  const min = typeof schema["minLength"] === "number" ? schema["minLength"] : 0
  const max = typeof schema["maxLength"] === "number" ? schema["maxLength"] : Number.POSITIVE_INFINITY
  return "example".padEnd(min, "x").slice(0, Math.max(min, Math.min(max, 7)))
}

const numberOf = (schema: Json): number => {
  const min = typeof schema["minimum"] === "number" ? schema["minimum"] : undefined
  const max = typeof schema["maximum"] === "number" ? schema["maximum"] : undefined
  const value = Math.max(min ?? 1, 1)
  return max !== undefined && value > max ? max : value
}

const sampleValue = (schema: unknown, components: Json, name: string | undefined, depth: number): unknown => {
  const s = resolve(schema, components)
  if (s === undefined || depth > 8) return NO_VALUE
  if (name !== undefined && name in BY_NAME) return BY_NAME[name]
  if (Array.isArray(s["examples"]) && s["examples"].length > 0) return s["examples"][0]
  if ("const" in s) return s["const"]
  if (Array.isArray(s["enum"]) && s["enum"].length > 0) return s["enum"][0]
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    const alternatives = s[key]
    if (!Array.isArray(alternatives)) continue
    for (const alternative of alternatives) {
      const resolved = resolve(alternative, components)
      if (resolved?.["type"] === "null") continue
      const value = sampleValue(alternative, components, name, depth + 1)
      if (value !== NO_VALUE) return value
    }
    return NO_VALUE
  }
  const types = Array.isArray(s["type"]) ? s["type"] : [s["type"]]
  const type = types.find((t) => t !== "null")
  switch (type) {
    case "string":
      return stringOf(s)
    case "integer":
    case "number":
      return numberOf(s)
    case "boolean":
      return true
    case "array": {
      const item = sampleValue(s["items"], components, undefined, depth + 1)
      const min = typeof s["minItems"] === "number" ? s["minItems"] : 0
      return item === NO_VALUE || min === 0 ? [] : Array.from({ length: min }, () => item)
    }
    case "object": {
      const properties = isObject(s["properties"]) ? s["properties"] : {}
      const required = new Set(Array.isArray(s["required"]) ? s["required"].map(String) : [])
      const out: Json = {}
      for (const [key, property] of Object.entries(properties)) {
        // the required fields, and the optional ones whose meaning is known
        const known = key in BY_NAME || Array.isArray(resolve(property, components)?.["examples"])
        if (!required.has(key) && !known) continue
        const value = sampleValue(property, components, key, depth + 1)
        if (value !== NO_VALUE) out[key] = value
      }
      return out
    }
    default:
      return NO_VALUE
  }
}

/** The example of one request body schema (undefined when none can be made). */
export const exampleOf = (schema: unknown, components: Json): unknown => {
  const value = sampleValue(schema, components, undefined, 0)
  return value === NO_VALUE ? undefined : value
}

/** Writes `example` into every JSON request body of the document that has none. */
export const addRequestExamples = (spec: Json): Json => {
  const components = isObject(spec["components"]) && isObject(spec["components"]["schemas"]) ? spec["components"]["schemas"] : {}
  const paths = isObject(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !isObject(operation["requestBody"])) continue
      const content = operation["requestBody"]["content"]
      const media = isObject(content) ? content["application/json"] : undefined
      if (!isObject(media) || "example" in media) continue
      const example = exampleOf(media["schema"], components)
      if (example !== undefined) media["example"] = example
    }
  }
  return spec
}
