import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppKey } from "../platform/Crypto.ts"
import { type Mail } from "../platform/Mailer.ts"
import { mapSliced } from "../platform/Slices.ts"
import { type NewMessage } from "./Messages.ts"
import { OutboxSender } from "./Sender.ts"
import { TELEGRAM_CHANNEL } from "./TelegramDelivery.ts"

const Inserted = Schema.Struct({ id: Schema.Int })

/**
 * The outbox room ([D96]): every e-mail (and every webhook delivery of [D101]) is written here in
 * the transaction of what caused it, then sent by a sender that claims due rows with `SKIP LOCKED`:
 * the jobs of [D80] run it on one instance at a time, and `wake` runs it right after a commit on
 * the instance that wrote, so mail is prompt. A failure is retried with backoff (10 s doubling up
 * to 1 h) and given up 24 h after the message was written (`failed`, listed for admins). This file is
 * the queue; the sender is `Sender.ts`, the admins' list `Admin.ts`.
 */
export class Outbox extends Effect.Service<Outbox>()("outbox/Outbox", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const sender = yield* OutboxSender

    const insertRow = SqlSchema.findOne({
      Request: Schema.Struct({
        channel: Schema.String,
        kind: Schema.String,
        dedupeKey: Schema.String,
        orderingKey: Schema.NullOr(Schema.String),
        recipient: Schema.String,
        subject: Schema.String,
        payload: Schema.String,
        now: Schema.DateFromSelf
      }),
      Result: Inserted,
      execute: (r) => sql`
        insert into outbox (channel, kind, dedupe_key, ordering_key, recipient, subject, payload, created_at, next_attempt_at, updated_at)
        values (${r.channel}, ${r.kind}, ${r.dedupeKey}, ${r.orderingKey}, ${r.recipient}, ${r.subject}, ${r.payload}, ${r.now}, ${r.now}, ${r.now})
        on conflict (dedupe_key) do nothing
        returning id`
    })

    /**
     * Writes a message in the caller's transaction (call it inside `sql.withTransaction`): it exists
     * iff the cause commits. An occasion already written is not written again: `false`.
     */
    const enqueue = (message: NewMessage): Effect.Effect<boolean> =>
      Effect.flatMap(clock.now, (now) =>
        insertRow({
          channel: message.channel,
          kind: message.kind,
          dedupeKey: message.dedupeKey,
          orderingKey: message.orderingKey ?? null,
          recipient: message.recipient,
          subject: message.subject,
          payload: appKey.encrypt(message.body),
          now
        })
      ).pipe(Effect.map(Option.isSome), Effect.orDie)

    /** an e-mail as a message of the `mail` channel */
    const enqueueMail = (input: { readonly kind: string; readonly dedupeKey: string; readonly mail: Mail }) =>
      enqueue({
        channel: "mail",
        kind: input.kind,
        dedupeKey: input.dedupeKey,
        recipient: input.mail.to,
        subject: input.mail.subject,
        body: JSON.stringify(input.mail)
      })

    const insertMany = SqlSchema.findAll({
      Request: Schema.Struct({ rows: Schema.String, now: Schema.DateFromSelf }),
      Result: Inserted,
      execute: (r) => sql`
        insert into outbox (channel, kind, dedupe_key, ordering_key, recipient, subject, payload, created_at, next_attempt_at, updated_at)
        select m.channel, m.kind, m.dedupe_key, m.ordering_key, m.recipient, m.subject, m.payload, ${r.now}, ${r.now}, ${r.now}
        from jsonb_to_recordset(${r.rows}::jsonb)
          as m(channel text, kind text, dedupe_key text, ordering_key text, recipient text, subject text, payload text)
        on conflict (dedupe_key) do nothing
        returning id`
    })

    /** a Telegram message ([D125]) to a chat, in the caller's transaction, once per occasion */
    const enqueueTelegram = (input: { readonly kind: string; readonly dedupeKey: string; readonly chatId: string; readonly text: string }) =>
      enqueue({
        channel: TELEGRAM_CHANNEL,
        kind: input.kind,
        dedupeKey: input.dedupeKey,
        recipient: input.chatId,
        subject: "",
        body: JSON.stringify({ chat_id: input.chatId, text: input.text })
      })

    /** many e-mails in one statement, in the caller's transaction; how many were new */
    const enqueueMails = (inputs: ReadonlyArray<{ readonly kind: string; readonly dedupeKey: string; readonly mail: Mail }>) =>
      inputs.length === 0
        ? Effect.succeed(0)
        : Effect.gen(function* () {
            const now = yield* clock.now
            // encrypted in slices of a few ms: a jobs batch does not block the API (issue 27)
            const rows = yield* mapSliced(inputs, (i) => ({
              channel: "mail",
              kind: i.kind,
              dedupe_key: i.dedupeKey,
              ordering_key: null,
              recipient: i.mail.to,
              subject: i.mail.subject,
              payload: appKey.encrypt(JSON.stringify(i.mail))
            }))
            return yield* insertMany({ now, rows: JSON.stringify(rows) })
          }).pipe(
            Effect.map((rows) => rows.length),
            Effect.orDie
          )

    /** many Telegram messages in one statement, in the caller's transaction; how many were new */
    const enqueueTelegrams = (inputs: ReadonlyArray<{ readonly kind: string; readonly dedupeKey: string; readonly chatId: string; readonly text: string }>) =>
      inputs.length === 0
        ? Effect.succeed(0)
        : Effect.gen(function* () {
            const now = yield* clock.now
            const rows = yield* mapSliced(inputs, (i) => ({
              channel: TELEGRAM_CHANNEL,
              kind: i.kind,
              dedupe_key: i.dedupeKey,
              ordering_key: null,
              recipient: i.chatId,
              subject: "",
              payload: appKey.encrypt(JSON.stringify({ chat_id: i.chatId, text: i.text }))
            }))
            return yield* insertMany({ now, rows: JSON.stringify(rows) })
          }).pipe(
            Effect.map((rows) => rows.length),
            Effect.orDie
          )

    return {
      enqueue,
      enqueueTelegrams,
      enqueueMail,
      enqueueMails,
      enqueueTelegram,
      /** sends due messages now, in the background: call it AFTER the transaction that wrote them committed */
      wake: sender.wake,
      /** another room's channel (webhooks of [D101]) registers how its messages are delivered */
      registerDelivery: sender.registerDelivery,
      /** what to do when a channel's recipient cannot be reached any more ([D125]: a blocked Telegram chat) */
      registerUnreachable: sender.registerUnreachable
    } as const
  }),
  dependencies: [OutboxSender.Default]
}) {}
