import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { TelegramBotApi } from "../platform/Telegram.ts"
import type { Delivery, DeliveryFailure } from "./Messages.ts"

/** The outbox channel of Telegram messages ([D125]); the recipient is the chat id. */
export const TELEGRAM_CHANNEL = "telegram"

/**
 * [D125]: at most 25 messages a second in all. One message per 45 ms (about 22 a second) leaves a
 * margin for the jitter between the slot and the moment the request reaches Telegram.
 */
export const TELEGRAM_GAP_MS = 45

/** a slot further away than this is not waited for in the pass: the message is deferred instead */
const HORIZON_MS = 1000

/** a Telegram message as stored (sealed) in the outbox */
export const TelegramBody = Schema.Struct({ chat_id: Schema.String, text: Schema.String })
const decodeBody = Schema.decodeUnknownSync(Schema.parseJson(TelegramBody))

const Slot = Schema.Struct({ slot: Schema.DateFromSelf })
const NextAt = Schema.Struct({ next_at: Schema.DateFromSelf })

/**
 * The Telegram channel's delivery ([D125]), registered with the outbox's sender: at most once
 * (the sender marks the row in flight first), paced through `outbox_pace` so that every instance
 * together keeps to 25 a second, Telegram's 429 `retry_after` honoured by every instance (the pace
 * moves past it), a 403 (the user blocked the bot) reported as an unreachable recipient (accounts
 * unlinks the chat), a request that may have reached Telegram never sent again.
 *
 * The pace runs on the wall clock, not the application's clock: it is about how fast requests
 * reach Telegram, not about when things are due.
 */
export const makeTelegramDelivery = (bot: TelegramBotApi) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const reserve = SqlSchema.findOne({
      Request: Schema.Struct({ now: Schema.DateFromSelf, gapSeconds: Schema.Number, horizon: Schema.DateFromSelf }),
      Result: Slot,
      execute: (r) => sql`
        insert into outbox_pace as p (channel, next_at)
        values (${TELEGRAM_CHANNEL}, ${r.now}::timestamptz + ${r.gapSeconds}::float8 * interval '1 second')
        on conflict (channel) do update
          set next_at = greatest(p.next_at, ${r.now}::timestamptz) + ${r.gapSeconds}::float8 * interval '1 second'
          where p.next_at <= ${r.horizon}
        returning next_at - ${r.gapSeconds}::float8 * interval '1 second' as slot`
    })
    const nextAt = SqlSchema.findOne({
      Request: Schema.Void,
      Result: NextAt,
      execute: () => sql`select next_at from outbox_pace where channel = ${TELEGRAM_CHANNEL}`
    })
    /** nobody sends before `until` (Telegram's 429 applies to the bot, on every instance) */
    const pauseUntil = SqlSchema.void({
      Request: Schema.Struct({ until: Schema.DateFromSelf }),
      execute: (r) => sql`
        insert into outbox_pace as p (channel, next_at) values (${TELEGRAM_CHANNEL}, ${r.until})
        on conflict (channel) do update set next_at = greatest(p.next_at, ${r.until})`
    })

    // In this process the requests also leave one by one, at least a gap apart when they actually
    // go: a stalled event loop that wakes several sleeping sends at once does not fire them together.
    const gate = yield* Effect.makeSemaphore(1)
    let lastDispatch = 0

    /** a slot within the horizon, waited for; else how long until the pace has one */
    const takeSlot: Effect.Effect<Option.Option<number>> = gate
      .withPermits(1)(
        Effect.gen(function* () {
          const now = new Date()
          const slot = yield* reserve({ now, gapSeconds: TELEGRAM_GAP_MS / 1000, horizon: new Date(now.getTime() + HORIZON_MS) })
          if (Option.isSome(slot)) {
            const wait = Math.max(slot.value.slot.getTime(), lastDispatch + TELEGRAM_GAP_MS) - Date.now()
            if (wait > 0) yield* Effect.sleep(wait)
            lastDispatch = Date.now()
            return Option.none()
          }
          const next = yield* nextAt(undefined)
          return Option.some(Option.match(next, { onNone: () => HORIZON_MS, onSome: (n) => Math.max(1, n.next_at.getTime() - Date.now()) }))
        })
      )
      .pipe(Effect.orDie)

    const deliver: Delivery = (message) =>
      Effect.gen(function* () {
        const body = decodeBody(message.body)
        const busy = yield* takeSlot
        if (Option.isSome(busy)) {
          return yield* Effect.fail<DeliveryFailure>({ reason: "paced: waiting for a sending slot", deferred: true, retryAfterMs: busy.value })
        }
        const sent = yield* Effect.either(bot.sendMessage(body.chat_id, body.text))
        if (sent._tag === "Right") return
        const failure = sent.left
        switch (failure._tag) {
          case "RateLimited":
            yield* pauseUntil({ until: new Date(Date.now() + failure.retryAfterMs) }).pipe(Effect.orDie)
            return yield* Effect.fail<DeliveryFailure>({ reason: failure.reason, retryAfterMs: failure.retryAfterMs })
          case "Unreachable":
            return yield* Effect.fail<DeliveryFailure>({ reason: failure.reason, giveUp: true, unreachable: true })
          case "Rejected":
            return yield* Effect.fail<DeliveryFailure>({ reason: failure.reason, giveUp: true })
          case "NotSent":
            return yield* Effect.fail<DeliveryFailure>({ reason: failure.reason })
          case "Unknown":
            // it may have arrived: never sent twice ([D125])
            return yield* Effect.fail<DeliveryFailure>({ reason: `delivery unknown, not sent again: ${failure.reason}`, giveUp: true })
        }
      })

    return deliver
  })
