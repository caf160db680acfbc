import * as HttpApi from "@effect/platform/HttpApi"
import type * as HttpApiGroup from "@effect/platform/HttpApiGroup"

interface Node<V> {
  readonly statics: Map<string, Node<V>>
  param: Node<V> | undefined
  value: V | undefined
}

const node = <V>(): Node<V> => ({ statics: new Map(), param: undefined, value: undefined })

/**
 * The route template of a request path (`/v1/invoices/:invoice` for `/v1/invoices/3f2c...`), by
 * the paths of the API's endpoints and of the routes beside it (`/docs`, ...). The router keeps
 * the route it matched to itself, so the paths are matched again: a template without parameters
 * by one lookup, the others on a tree of path segments, fixed segments before parameters. Each
 * template carries a value made once (`make`). Undefined when no template matches.
 */
export const routeMatcher = <ApiId extends string, Groups extends HttpApiGroup.HttpApiGroup.Any, E, R, V>(
  api: HttpApi.HttpApi<ApiId, Groups, E, R>,
  extra: ReadonlyArray<string>,
  make: (template: string) => V
): ((url: string) => V | undefined) => {
  const root = node<V>()
  /** templates without parameters by their path: most requests are found by one lookup */
  const fixedPaths = new Map<string, V>()
  const add = (template: string) => {
    let at = root
    for (const segment of template.split("/").slice(1)) {
      if (segment.startsWith(":")) {
        at = at.param ??= node()
      } else {
        let next = at.statics.get(segment)
        if (next === undefined) at.statics.set(segment, (next = node()))
        at = next
      }
    }
    at.value ??= make(template)
    if (!template.includes("/:") && !fixedPaths.has(template)) fixedPaths.set(template, at.value)
  }
  HttpApi.reflect(api, { onGroup: () => {}, onEndpoint: ({ endpoint }) => add(endpoint.path) })
  for (const template of extra) add(template)

  const walk = (at: Node<V>, path: string, from: number): V | undefined => {
    if (from > path.length) return at.value
    let to = path.indexOf("/", from)
    if (to === -1) to = path.length
    const segment = path.slice(from, to)
    const fixed = at.statics.get(segment)
    if (fixed !== undefined) {
      const found = walk(fixed, path, to + 1)
      if (found !== undefined) return found
    }
    return at.param !== undefined && segment.length > 0 ? walk(at.param, path, to + 1) : undefined
  }

  return (url) => {
    const query = url.indexOf("?")
    let path = query === -1 ? url : url.slice(0, query)
    if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
    return fixedPaths.get(path) ?? (path.startsWith("/") ? walk(root, path, 1) : undefined)
  }
}
