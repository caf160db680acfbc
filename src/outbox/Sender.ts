import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as FiberSet from "effect/FiberSet"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { Mailer } from "../platform/Mailer.ts"
import { TelegramBot } from "../platform/Telegram.ts"
import {
  backoffMs,
  CLAIM_LEASE_MS,
  type ClaimedMessage,
  type Delivery,
  type DeliveryFailure,
  type DeliveryOptions,
  GIVE_UP_AFTER_MS,
  OUTBOX_BATCH,
  type SendReport,
  SENT_RETENTION_MS
} from "./Messages.ts"
import { outboxMetrics } from "./OutboxMetrics.ts"
import { makeTelegramDelivery, TELEGRAM_CHANNEL } from "./TelegramDelivery.ts"

const ClaimedRow = Schema.Struct({
  id: Schema.Int,
  channel: Schema.String,
  kind: Schema.String,
  recipient: Schema.String,
  payload: Schema.String,
  attempts: Schema.Int,
  created_at: Schema.DateFromSelf,
  ordering_key: Schema.NullOr(Schema.String),
  in_flight: Schema.Boolean
})

/** a mail as stored (sealed) in the outbox */
const MailBody = Schema.Struct({
  to: Schema.String,
  subject: Schema.String,
  text: Schema.String,
  html: Schema.optional(Schema.String)
})

const Count = Schema.Struct({ n: Schema.Int })

/** a deferred message without a wait of its own is due again this soon */
const FIRST_DEFER_MS = 1000

/**
 * The outbox's sender ([D96]): claims due rows with `SKIP LOCKED` and hands each to its channel's
 * delivery (`mail` here; other rooms register theirs). The jobs of [D80] run it on one instance at
 * a time, and `wake` runs it right after a commit on the instance that wrote, so mail is prompt. A
 * failure is retried with backoff (10 s doubling up to 1 h) and given up 24 h after the message was
 * written (`failed`, listed for admins).
 */
export class OutboxSender extends Effect.Service<OutboxSender>()("outbox/OutboxSender", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const mailer = yield* Mailer
    // the passes `wake` starts belong to this service's scope (issue 34): a pass still running when
    // the process closes its layers (a CLI command done, a server stopping) is interrupted before
    // the database goes, its rows left for the next pass, never failing on a closed pool
    const runInBackground = yield* FiberSet.runtime(yield* FiberSet.make())<never>()
    const outboxFigures = yield* outboxMetrics

    const deliveries = new Map<string, Delivery>()
    const options = new Map<string, DeliveryOptions>()
    /** what a channel does when a recipient turns out unreachable (Telegram: the chat is unlinked) */
    const unreachableHooks = new Map<string, (recipient: string) => Effect.Effect<void>>()
    const decodeMail = Schema.decodeUnknownSync(Schema.parseJson(MailBody))
    deliveries.set("mail", (message) =>
      Effect.suspend(() => mailer.send(decodeMail(message.body))).pipe(
        // a server that accepts the connection and then hangs must not hold the sender
        Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => ({ reason: "SMTP timed out after 30 s" }) })
      )
    )
    // [D125]: Telegram messages, never sent twice, when a bot is configured
    const bot = yield* TelegramBot
    if (Option.isSome(bot)) {
      deliveries.set(TELEGRAM_CHANNEL, yield* makeTelegramDelivery(bot.value))
      options.set(TELEGRAM_CHANNEL, { atMostOnce: true })
    }

    const claimRows = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, leaseUntil: Schema.DateFromSelf, limit: Schema.Int }),
      Result: ClaimedRow,
      // a row waits while an earlier row of its ordering key is pending (in order per endpoint);
      // the lease in next_attempt_at keeps it from other senders while it is being sent
      execute: (r) => sql`
        update outbox set next_attempt_at = ${r.leaseUntil}, updated_at = ${r.now}
        where id in (
          select o.id from outbox o
          where o.status = 'pending' and o.next_attempt_at <= ${r.now}
            and (o.ordering_key is null or not exists (
              select 1 from outbox p where p.ordering_key = o.ordering_key and p.status = 'pending' and p.id < o.id))
          order by o.id
          limit ${r.limit}
          for update of o skip locked)
        returning id, channel, kind, recipient, payload, attempts, created_at, ordering_key, in_flight_at is not null as in_flight`
    })

    const markSent = SqlSchema.void({
      Request: Schema.Struct({ ids: Schema.Array(Schema.Int), now: Schema.DateFromSelf }),
      execute: (r) => sql`
        update outbox set status = 'sent', attempts = attempts + 1, sent_at = ${r.now}, updated_at = ${r.now}, last_error = null,
          in_flight_at = null
        where id in ${sql.in(r.ids)} and status = 'pending'`
    })

    /** an at-most-once channel's row, just before its delivery runs */
    const markInFlight = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf }),
      execute: (r) => sql`update outbox set in_flight_at = ${r.now}, updated_at = ${r.now} where id = ${r.id} and status = 'pending'`
    })

    /** due again at `next`, not counted as an attempt (the channel's pace had no slot) */
    const defer = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.Int, now: Schema.DateFromSelf, next: Schema.DateFromSelf }),
      execute: (r) => sql`
        update outbox set next_attempt_at = ${r.next}, updated_at = ${r.now}, in_flight_at = null
        where id = ${r.id} and status = 'pending'`
    })

    const markFailure = SqlSchema.void({
      Request: Schema.Struct({
        id: Schema.Int,
        now: Schema.DateFromSelf,
        next: Schema.DateFromSelf,
        giveUp: Schema.Boolean,
        error: Schema.String
      }),
      execute: (r) => sql`
        update outbox set attempts = attempts + 1, last_error = ${r.error}, updated_at = ${r.now}, in_flight_at = null,
          next_attempt_at = ${r.next}, status = case when ${r.giveUp} then 'failed' else 'pending' end
        where id = ${r.id} and status = 'pending'`
    })

    const deliver = (message: ClaimedMessage): Effect.Effect<void, DeliveryFailure> =>
      Effect.suspend((): Effect.Effect<void, DeliveryFailure> => {
        const delivery = deliveries.get(message.channel)
        return delivery === undefined ? Effect.fail({ reason: `no delivery for channel ${message.channel}` }) : delivery(message)
      }).pipe(
        Effect.catchAllDefect(
          (defect): Effect.Effect<never, DeliveryFailure> => Effect.fail({ reason: defect instanceof Error ? defect.message : String(defect) })
        )
      )

    /** the sender's own pass again after `ms` (a peer's `retry_after`, a paced channel's next slot) */
    const wakeAfter = (ms: number) =>
      Effect.sync(() => {
        runInBackground(Effect.sleep(Math.max(0, ms) + 50).pipe(Effect.zipRight(Effect.suspend(() => pass))))
      })

    /** one claimed message: delivered and marked, or its failure recorded */
    const sendOne = (message: ClaimedMessage) =>
      Effect.gen(function* () {
        const atMostOnce = options.get(message.channel)?.atMostOnce === true
        if (atMostOnce && message.inFlight) {
          // its sender stopped between marking it and hearing back: it may have arrived ([D125]: never twice)
          const now = yield* clock.now
          const error = "the sender stopped while sending it; not sent again, so that it is never sent twice"
          yield* markFailure({ id: message.id, now, next: now, giveUp: true, error })
          outboxFigures.attempt(message.channel, message.kind, "given_up")
          yield* Effect.logWarning("outbox: message given up", { id: message.id, kind: message.kind, reason: error })
          return "failed" as const
        }
        if (atMostOnce) yield* markInFlight({ id: message.id, now: yield* clock.now })
        const outcome = yield* Effect.either(deliver(message))
        const now = yield* clock.now
        if (outcome._tag === "Right") {
          // in order per ordering key: its next row may only be claimed once this one is marked; a
          // channel other than mail is marked at once (a stop before the batch's mark would send it again)
          if (message.orderingKey !== null || message.channel !== "mail") yield* markSent({ ids: [message.id], now })
          outboxFigures.attempt(message.channel, message.kind, "sent")
          return "sent" as const
        }
        const failure = outcome.left
        if (failure.deferred === true) {
          const wait = failure.retryAfterMs ?? FIRST_DEFER_MS
          yield* defer({ id: message.id, now, next: new Date(now.getTime() + wait) })
          yield* wakeAfter(wait)
          return "retried" as const
        }
        if (failure.unreachable === true) {
          const hook = unreachableHooks.get(message.channel)
          if (hook !== undefined) yield* hook(message.recipient)
        }
        const attempts = message.attempts + 1
        const next = new Date(now.getTime() + (failure.retryAfterMs ?? backoffMs(attempts)))
        const giveUp = failure.giveUp === true || next.getTime() >= message.createdAt.getTime() + GIVE_UP_AFTER_MS
        yield* markFailure({ id: message.id, now, next, giveUp, error: failure.reason.slice(0, 500) })
        outboxFigures.attempt(message.channel, message.kind, giveUp ? "given_up" : "error")
        if (giveUp) yield* Effect.logWarning("outbox: message given up", { id: message.id, kind: message.kind, attempts })
        else if (failure.retryAfterMs !== undefined) yield* wakeAfter(failure.retryAfterMs)
        return giveUp ? ("failed" as const) : ("retried" as const)
      }).pipe(Effect.orDie)

    /**
     * Sends what is due, batch after batch, until nothing is due. Safe on many instances at once:
     * each row is claimed by one sender. Rows of one ordering key go one by one, in order.
     */
    const sendDue: Effect.Effect<SendReport> = Effect.gen(function* () {
      const report = { sent: 0, retried: 0, failed: 0 }
      for (;;) {
        const now = yield* clock.now
        const claimed = yield* claimRows({ now, leaseUntil: new Date(now.getTime() + CLAIM_LEASE_MS), limit: OUTBOX_BATCH }).pipe(Effect.orDie)
        if (claimed.length === 0) return report
        const messages = claimed.map(
          (row): ClaimedMessage => ({
            id: row.id,
            channel: row.channel,
            kind: row.kind,
            recipient: row.recipient,
            body: appKey.decrypt(row.payload),
            attempts: row.attempts,
            createdAt: row.created_at,
            orderingKey: row.ordering_key,
            inFlight: row.in_flight
          })
        )
        // different ordering keys go side by side; one key's messages (at most one is claimed) in order
        const outcomes = yield* Effect.forEach(messages, sendOne, { concurrency: 8 })
        // the sent ones of the batch in one statement (a crash before it sends them again: at least once)
        const sentIds = messages.filter((m, i) => outcomes[i] === "sent" && m.orderingKey === null && m.channel === "mail").map((m) => m.id)
        if (sentIds.length > 0) yield* markSent({ ids: sentIds, now: yield* clock.now }).pipe(Effect.orDie)
        for (const o of outcomes) report[o] += 1
        // a row that only waited for its predecessor is due now: claim again while any were sent
        if (outcomes.every((o) => o === "retried")) return report
      }
    })

    // one pass at a time on this instance; a wake during a pass asks for one more pass
    let running = false
    let again = false
    const pass: Effect.Effect<void> = Effect.suspend(() => {
      if (running) {
        again = true
        return Effect.void
      }
      running = true
      again = false
      return sendDue.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("outbox: send pass failed", cause)),
        Effect.ensuring(
          Effect.sync(() => {
            running = false
          })
        ),
        Effect.zipRight(Effect.suspend(() => (again ? pass : Effect.void)))
      )
    })

    /**
     * Sends due messages now, in the background, on this instance's own context: call it AFTER the
     * transaction that wrote them committed (the caller never waits for SMTP, [D23]).
     */
    const wake: Effect.Effect<void> = Effect.sync(() => {
      runInBackground(pass)
    })

    const purgeRows = SqlSchema.single({
      Request: Schema.Struct({ before: Schema.DateFromSelf, limit: Schema.Int }),
      Result: Count,
      execute: (r) => sql`
        with gone as (
          delete from outbox where id in (
            select id from outbox where status = 'sent' and sent_at < ${r.before} order by sent_at limit ${r.limit})
          returning 1)
        select count(*)::int as n from gone`
    })

    /** deletes delivered rows past retention, batch by batch ([D80] rev. 2); the count */
    const purgeSent = (now: Date) =>
      Effect.gen(function* () {
        const before = new Date(now.getTime() - SENT_RETENTION_MS)
        let total = 0
        for (;;) {
          const { n } = yield* purgeRows({ before, limit: 1000 })
          total += n
          if (n < 1000) return total
        }
      }).pipe(Effect.orDie)

    return {
      wake,
      sendDue,
      purgeSent,
      /** another room's channel (webhooks of [D101]) registers how its messages are delivered */
      registerDelivery: (channel: string, delivery: Delivery, deliveryOptions: DeliveryOptions = {}) =>
        Effect.sync(() => {
          deliveries.set(channel, delivery)
          options.set(channel, deliveryOptions)
        }),
      /**
       * what to do when a channel's recipient cannot be reached any more (a delivery failed with
       * `unreachable`): the room that owns the recipients registers it (accounts: a Telegram chat
       * that blocked the bot is unlinked, [D125])
       */
      registerUnreachable: (channel: string, hook: (recipient: string) => Effect.Effect<void>) => Effect.sync(() => void unreachableHooks.set(channel, hook))
    } as const
  }),
  dependencies: [TelegramBot.Live]
}) {}
