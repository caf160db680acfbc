import { SQL } from "bun"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"

/** the longest wait between two attempts to subscribe again ([D126]: resume within 5 s) */
export const LISTEN_RETRY_MAX_MS = 1_000
const LISTEN_RETRY_FIRST_MS = 100

export interface ListenHandlers {
  /** a notification on the channel */
  readonly notified: () => void
  /** the channel is subscribed (again): whatever was missed meanwhile must be read */
  readonly subscribed: () => void
  /** the connection is gone (`closing`: because the layer is closing) */
  readonly lost: (closing: boolean) => void
}

/** the wait before attempt `n` (0 first): 100 ms doubling, at most `LISTEN_RETRY_MAX_MS` */
export const listenRetryDelay = (attempt: number): number => Math.min(LISTEN_RETRY_MAX_MS, LISTEN_RETRY_FIRST_MS * 2 ** Math.min(attempt, 10))

/**
 * LISTEN on `channel` on a dedicated connection, for as long as the scope lasts ([D126]). When
 * the connection is lost (a failover, a restart) a new one is made and subscribed on our own
 * bounded backoff (100 ms doubling to 1 s), not the driver's (which waited 18.5 s after a 16 s
 * outage); `subscribed` is called after each subscription, so the caller reads what it missed.
 */
export const listenChannel = (url: string, channel: string, applicationName: string, on: ListenHandlers) =>
  Effect.gen(function* () {
    let closing = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closing = true
      })
    )
    let failures = 0
    /** one connection's life: subscribe, then wait until it closes */
    const session = Effect.gen(function* () {
      const closed = yield* Deferred.make<void>()
      const client = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new SQL(url, {
              max: 1,
              connectionTimeout: 5,
              connection: { application_name: applicationName },
              onclose: () => Deferred.unsafeDone(closed, Exit.void)
            })
        ),
        (client) => Effect.promise(() => client.close({ timeout: 0 }).catch(() => {})).pipe(Effect.timeout("2 seconds"), Effect.ignore)
      )
      yield* Effect.tryPromise(() =>
        client.listen(
          channel,
          () => on.notified(),
          () => {
            failures = 0
            on.subscribed()
          }
        )
      )
      yield* Deferred.await(closed)
    }).pipe(Effect.scoped)

    const loop = Effect.suspend(() =>
      session.pipe(
        Effect.tapError(() =>
          failures === 0 ? Effect.logWarning(`LISTEN ${channel}: the connection failed; retrying every ${LISTEN_RETRY_MAX_MS} ms at most`) : Effect.void
        ),
        Effect.ignore,
        Effect.zipRight(Effect.sync(() => on.lost(closing))),
        Effect.zipRight(Effect.suspend(() => Effect.sleep(Duration.millis(listenRetryDelay(failures++)))))
      )
    ).pipe(Effect.forever)
    yield* Effect.forkScoped(loop)
  })
