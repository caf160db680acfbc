import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { AppConfig, directDatabaseUrl } from "../platform/Config.ts"
import { listenChannel } from "../platform/Listen.ts"

/**
 * [D105]: wakes the push streams of this instance when the node change log ([D92]) grows, on
 * whichever instance (or tool) wrote it:
 * 1. on PostgreSQL each instance LISTENs on `vpn_peer_changes` (migration 22's triggers notify at
 *    commit) on a dedicated connection (`application_name` `vpn-api-listen-peers`);
 * 2. the newest revision is also read every `POLL_MS` while streams are open and that connection
 *    is not subscribed (the embedded database, a lost connection), and every `SAFETY_MS` while it
 *    is: a missed notification delays a push, it never loses one (streams read the log itself).
 * Each wake publishes the newest revision; a stream asks the log what changed after its own.
 */

/** the channel migration 22's triggers notify */
export const PEER_CHANNEL = "vpn_peer_changes"
export const LISTEN_PEERS_APPLICATION_NAME = "vpn-api-listen-peers"
const POLL_MS = 200
const SAFETY_MS = 5_000

/**
 * [D126]: a read of the newest revision given up after this long. In a failover a query can
 * stay unanswered (seen with `kill -9` of the primary's postmaster); the next wake reads again.
 */
export const CHECK_TIMEOUT_MS = 3_000

/**
 * One `check` at a time: a burst of wakes reads the head once or twice, not once each. A check
 * not done within `timeoutMs` is given up, so that the wakes after it (a notification, the
 * poll) are not queued behind it for good: pushes would stop on this instance until a restart.
 */
export const singleFlight = (check: Effect.Effect<void>, timeoutMs: number) =>
  Effect.gen(function* () {
    const checking = yield* Effect.makeSemaphore(1)
    let pending = false
    return Effect.suspend(() => {
      if (pending) return Effect.void
      pending = true
      return checking.withPermits(1)(
        Effect.suspend(() => {
          pending = false
          return check.pipe(
            Effect.timeout(Duration.millis(timeoutMs)),
            Effect.catchAll(() => Effect.logDebug(`peer wake: the newest revision was not read within ${timeoutMs} ms; the next wake reads it`))
          )
        })
      )
    })
  })

export class PeerWake extends Effect.Service<PeerWake>()("vpn/PeerWake", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const runtime = yield* Effect.runtime<never>()
    const heads = yield* PubSub.sliding<number>(4)
    const head = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ head: Schema.NullOr(Schema.NumberFromString) }),
      execute: () => sql`select (select max(revision) from vpn_peer_changes)::text as head`
    })

    let streams = 0
    let subscribed = false
    let published = 0
    const check = head(undefined).pipe(
      Effect.flatMap(({ head }) => {
        if (head === null || head <= published) return Effect.void
        published = head
        return PubSub.publish(heads, head)
      }),
      Effect.catchAllCause((cause) => Effect.logDebug("peer wake: the newest revision was not read", cause))
    )
    const wake = yield* singleFlight(check, CHECK_TIMEOUT_MS)

    yield* Effect.suspend(() => (streams > 0 ? wake : Effect.void)).pipe(
      Effect.zipRight(Effect.suspend(() => Effect.sleep(subscribed ? SAFETY_MS : POLL_MS))),
      Effect.forever,
      Effect.forkScoped
    )

    const listenUrl = directDatabaseUrl(config)
    if (Option.isSome(listenUrl)) {
      yield* listenChannel(listenUrl.value, PEER_CHANNEL, LISTEN_PEERS_APPLICATION_NAME, {
        notified: () => Runtime.runFork(runtime)(wake),
        subscribed: () => {
          subscribed = true
          Runtime.runFork(runtime)(wake)
        },
        lost: () => {
          subscribed = false
        }
      })
    }

    return {
      /**
       * The newest revisions from now on, for as long as the scope lasts (subscribe before
       * reading the log, so no commit falls between the read and the subscription).
       */
      subscribe: Effect.acquireRelease(
        Effect.sync(() => {
          streams++
        }),
        () =>
          Effect.sync(() => {
            streams--
          })
      ).pipe(Effect.zipRight(PubSub.subscribe(heads))),
      /** read the newest revision now and wake the streams if it moved (a write of this instance) */
      wake
    } as const
  })
}) {}
