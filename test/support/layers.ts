import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/**
 * A `Test` layer of a service or port from the members a test needs (as the Effect examples'
 * `makeTestLayer`): any other member, when called, fails the test loudly instead of doing
 * something half-real. Pass it to `makeTestApp({ swap })`.
 */
export const makeTestLayer =
  <I, S extends object>(tag: Context.Tag<I, S>) =>
  (service: Partial<S>): Layer.Layer<I> =>
    Layer.succeed(
      tag,
      new Proxy(service, {
        get: (target, member) => {
          if (member in target) return target[member as keyof typeof target]
          throw new Error(`${tag.key}.${String(member)} is not in this Test layer`)
        }
      }) as S
    )
