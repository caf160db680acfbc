import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { DomainEvent, EventData, EventType } from "./Events.ts"

/**
 * The events port ([D101]): a room emits its domain events here, inside its own transaction; the
 * webhooks room provides it (one delivery per subscribed endpoint, `webhooks/Webhooks.ts`).
 */
export class DomainEvents extends Context.Tag("events/DomainEvents")<
  DomainEvents,
  {
    /** one event, in the caller's transaction */
    readonly emit: (event: DomainEvent) => Effect.Effect<void>
    /** many events of one type (the jobs' batches), in the caller's transaction */
    readonly emitMany: <T extends EventType>(type: T, events: ReadonlyArray<EventData<T>>) => Effect.Effect<void>
    /** sends what was emitted now, in the background: call it AFTER the transaction committed */
    readonly wake: Effect.Effect<void>
  }
>() {
  /**
   * issue 35: the events emitted, in order, in `emitted`; `wakes` counts the calls of `wake`
   * (a rule emits in its transaction and wakes after it)
   */
  static readonly Test = () => {
    const emitted: Array<DomainEvent> = []
    const counts = { wakes: 0 }
    return {
      emitted,
      counts,
      layer: Layer.succeed(DomainEvents, {
        emit: (event) => Effect.sync(() => void emitted.push(event)),
        emitMany: (type, events) => Effect.sync(() => void emitted.push(...events.map((data) => ({ type, data }) as DomainEvent))),
        wake: Effect.sync(() => void counts.wakes++)
      })
    }
  }
}
