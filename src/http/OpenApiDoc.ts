/**
 * The framework documents its own 400 decode error on every endpoint; ours is the 422 of
 * [D12] (declared on the Api), so the default goes from the document.
 */
type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null

export const dropFrameworkDefaults = (spec: Json): Json => {
  const paths = isObject(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isObject(item)) continue
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !isObject(operation["responses"])) continue
      const responses = operation["responses"]
      const bad = responses["400"]
      if (isObject(bad) && JSON.stringify(bad).includes("HttpApiDecodeError")) delete responses["400"]
    }
  }
  const components = isObject(spec["components"]) ? spec["components"] : {}
  const schemas = isObject(components["schemas"]) ? components["schemas"] : {}
  for (const name of ["HttpApiDecodeError", "Issue", "PropertyKey"]) delete schemas[name]
  return spec
}
