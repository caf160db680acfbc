import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig } from "../platform/Config.ts"
import { AppKey } from "../platform/Crypto.ts"
import { type Mail, Mailer } from "../platform/Mailer.ts"
import { Metrics, type OutboxDepthRow } from "../platform/Metrics.ts"
import { makePage } from "../platform/Page.ts"
import { type OutboxMessage, type OutboxStatus } from "./Domain.ts"

/** [D96]: a message is given up this long after it was written, then shows as `failed`. */
export const GIVE_UP_AFTER_MS = 24 * 3_600_000
/** the first retry comes this long after a failure, then twice as long each time... */
export const FIRST_RETRY_MS = 10_000
/** ...up to this */
export const MAX_RETRY_MS = 3_600_000
/** a claimed row is not claimed again for this long (a sender that died mid-send is retried after it) */
export const CLAIM_LEASE_MS = 5 * 60_000
/** delivered rows are deleted by the jobs this long after delivery ([D80] rev. 2) */
export const SENT_RETENTION_MS = 7 * 86_400_000
/** rows per claim and per purge batch */
export const OUTBOX_BATCH = 100
/** admins' list page size, as invoices */
export const OUTBOX_PAGE_SIZE = 15

/** the wait before attempt `attempts + 1` after `attempts` failures */
export const backoffMs = (attempts: number) => Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1))

/** A message to write: one per occasion (`dedupeKey`), its body sealed at rest. */
export interface NewMessage {
  readonly channel: string
  /** what the message is, e.g. `verify_email`, `expiry-3d`, `invoice.paid` */
  readonly kind: string
  /** unique per occasion: a second message with the same key is not written */
  readonly dedupeKey: string
  /** messages sharing it go out in order, one at a time ([D101]) */
  readonly orderingKey?: string | undefined
  readonly recipient: string
  readonly subject: string
  /** sealed with the application key before it is stored */
  readonly body: string
}

/** A claimed message, its body unsealed, handed to its channel's delivery. */
export interface ClaimedMessage {
  readonly id: number
  readonly channel: string
  readonly kind: string
  readonly recipient: string
  readonly body: string
  readonly attempts: number
  readonly createdAt: Date
  readonly orderingKey: string | null
}

/** a channel's delivery: fails with a reason to be retried */
export type Delivery = (message: ClaimedMessage) => Effect.Effect<void, { readonly reason: string }>

const ClaimedRow = Schema.Struct({
  id: Schema.Int,
  channel: Schema.String,
  kind: Schema.String,
  recipient: Schema.String,
  payload: Schema.String,
  attempts: Schema.Int,
  created_at: Schema.DateFromSelf,
  ordering_key: Schema.NullOr(Schema.String)
})

const ListRow = Schema.Struct({
  id: Schema.Int,
  channel: Schema.String,
  kind: Schema.String,
  recipient: Schema.String,
  subject: Schema.String,
  status: Schema.Literal("pending", "sent", "failed"),
  attempts: Schema.Int,
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromSelf,
  next_attempt_at: Schema.DateFromSelf,
  sent_at: Schema.NullOr(Schema.DateFromSelf),
  updated_at: Schema.DateFromSelf,
  total_rows: Schema.Int
})

/** a mail as stored (sealed) in the outbox */
const MailBody = Schema.Struct({
  to: Schema.String,
  subject: Schema.String,
  text: Schema.String,
  html: Schema.optional(Schema.String)
})

const Inserted = Schema.Struct({ id: Schema.Int })
const Count = Schema.Struct({ n: Schema.Int })

/** What one pass of the sender did. */
export interface SendReport {
  readonly sent: number
  readonly retried: number
  readonly failed: number
}

/**
 * The outbox room ([D96]): every e-mail (and every webhook delivery of [D101]) is written here in
 * the transaction of what caused it, then sent by a sender that claims due rows with `SKIP LOCKED`:
 * the jobs of [D80] run it on one instance at a time, and `wake` runs it right after a commit on
 * the instance that wrote, so mail is prompt. A failure is retried with backoff (10 s doubling up
 * to 1 h) and given up 24 h after the message was written (`failed`, listed for admins).
 */
export class Outbox extends Effect.Service<Outbox>()("outbox/Outbox", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const appKey = yield* AppKey
    const mailer = yield* Mailer
    const config = yield* AppConfig
    const runtime = yield* Effect.runtime<never>()
    const metrics = yield* Metrics

    const deliveries = new Map<string, Delivery>()
    const decodeMail = Schema.decodeUnknownSync(Schema.parseJson(MailBody))
    deliveries.set("mail", (message) =>
      Effect.suspend(() => mailer.send(decodeMail(message.body))).pipe(
        // a server that accepts the connection and then hangs must not hold the sender
        Effect.timeoutFail({ duration: "30 seconds", onTimeout: () => ({ reason: "SMTP timed out after 30 s" }) })
      ))

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
        })).pipe(Effect.map(Option.isSome), Effect.orDie)

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

    /** many e-mails in one statement, in the caller's transaction; how many were new */
    const enqueueMails = (inputs: ReadonlyArray<{ readonly kind: string; readonly dedupeKey: string; readonly mail: Mail }>) =>
      inputs.length === 0 ? Effect.succeed(0) : Effect.flatMap(clock.now, (now) =>
        insertMany({
          now,
          rows: JSON.stringify(inputs.map((i) => ({
            channel: "mail",
            kind: i.kind,
            dedupe_key: i.dedupeKey,
            ordering_key: null,
            recipient: i.mail.to,
            subject: i.mail.subject,
            payload: appKey.encrypt(JSON.stringify(i.mail))
          })))
        })).pipe(Effect.map((rows) => rows.length), Effect.orDie)

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
        returning id, channel, kind, recipient, payload, attempts, created_at, ordering_key`
    })

    const markSent = SqlSchema.void({
      Request: Schema.Struct({ ids: Schema.Array(Schema.Int), now: Schema.DateFromSelf }),
      execute: (r) => sql`
        update outbox set status = 'sent', attempts = attempts + 1, sent_at = ${r.now}, updated_at = ${r.now}, last_error = null
        where id in ${sql.in(r.ids)} and status = 'pending'`
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
        update outbox set attempts = attempts + 1, last_error = ${r.error}, updated_at = ${r.now},
          next_attempt_at = ${r.next}, status = case when ${r.giveUp} then 'failed' else 'pending' end
        where id = ${r.id} and status = 'pending'`
    })

    const deliver = (message: ClaimedMessage) =>
      Effect.suspend(() => {
        const delivery = deliveries.get(message.channel)
        return delivery === undefined
          ? Effect.fail({ reason: `no delivery for channel ${message.channel}` })
          : delivery(message)
      }).pipe(
        Effect.catchAllDefect((defect) => Effect.fail({ reason: defect instanceof Error ? defect.message : String(defect) }))
      )

    /** one claimed message: delivered and marked, or its failure recorded */
    const sendOne = (message: ClaimedMessage) =>
      Effect.gen(function*() {
        const outcome = yield* Effect.either(deliver(message))
        const now = yield* clock.now
        if (outcome._tag === "Right") {
          // in order per ordering key: its next row may only be claimed once this one is marked
          if (message.orderingKey !== null) yield* markSent({ ids: [message.id], now })
          metrics.outboxAttempt(message.channel, message.kind, "sent")
          return "sent" as const
        }
        const attempts = message.attempts + 1
        const next = new Date(now.getTime() + backoffMs(attempts))
        const giveUp = next.getTime() >= message.createdAt.getTime() + GIVE_UP_AFTER_MS
        yield* markFailure({ id: message.id, now, next, giveUp, error: outcome.left.reason.slice(0, 500) })
        metrics.outboxAttempt(message.channel, message.kind, giveUp ? "given_up" : "error")
        if (giveUp) yield* Effect.logWarning("outbox: message given up", { id: message.id, kind: message.kind, attempts })
        return giveUp ? "failed" as const : "retried" as const
      }).pipe(Effect.orDie)

    /**
     * Sends what is due, batch after batch, until nothing is due. Safe on many instances at once:
     * each row is claimed by one sender. Rows of one ordering key go one by one, in order.
     */
    const sendDue: Effect.Effect<SendReport> = Effect.gen(function*() {
      const report = { sent: 0, retried: 0, failed: 0 }
      for (;;) {
        const now = yield* clock.now
        const claimed = yield* claimRows({ now, leaseUntil: new Date(now.getTime() + CLAIM_LEASE_MS), limit: OUTBOX_BATCH })
          .pipe(Effect.orDie)
        if (claimed.length === 0) return report
        const messages = claimed.map((row): ClaimedMessage => ({
          id: row.id,
          channel: row.channel,
          kind: row.kind,
          recipient: row.recipient,
          body: appKey.decrypt(row.payload),
          attempts: row.attempts,
          createdAt: row.created_at,
          orderingKey: row.ordering_key
        }))
        // different ordering keys go side by side; one key's messages (at most one is claimed) in order
        const outcomes = yield* Effect.forEach(messages, sendOne, { concurrency: 8 })
        // the sent ones of the batch in one statement (a crash before it sends them again: at least once)
        const sentIds = messages.filter((m, i) => outcomes[i] === "sent" && m.orderingKey === null).map((m) => m.id)
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
        Effect.ensuring(Effect.sync(() => {
          running = false
        })),
        Effect.zipRight(Effect.suspend(() => again ? pass : Effect.void))
      )
    })

    /**
     * Sends due messages now, in the background, on this instance's own context: call it AFTER the
     * transaction that wrote them committed (the caller never waits for SMTP, [D23]).
     */
    const wake: Effect.Effect<void> = Effect.sync(() => {
      Runtime.runFork(runtime)(pass)
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
      Effect.gen(function*() {
        const before = new Date(now.getTime() - SENT_RETENTION_MS)
        let total = 0
        for (;;) {
          const { n } = yield* purgeRows({ before, limit: 1000 })
          total += n
          if (n < 1000) return total
        }
      }).pipe(Effect.orDie)

    const listRows = SqlSchema.findAll({
      Request: Schema.Struct({ status: Schema.NullOr(Schema.String), limit: Schema.Int, offset: Schema.Int }),
      Result: ListRow,
      execute: (r) => sql`
        select id, channel, kind, recipient, subject, status, attempts, last_error, created_at, next_attempt_at, sent_at,
               updated_at, count(*) over ()::int as total_rows
        from outbox
        where ${r.status === null ? sql`true` : sql`status = ${r.status}`}
        order by id desc
        limit ${r.limit} offset ${r.offset}`
    })
    const countRows = SqlSchema.single({
      Request: Schema.NullOr(Schema.String),
      Result: Count,
      execute: (status) => sql`select count(*)::int as n from outbox where ${status === null ? sql`true` : sql`status = ${status}`}`
    })

    /** the admins' list, newest first, paginated like invoices; never a body */
    const listPage = (status: OutboxStatus | undefined, pageNo: number) =>
      Effect.gen(function*() {
        const rows = yield* listRows({
          status: status ?? null,
          limit: OUTBOX_PAGE_SIZE,
          offset: (pageNo - 1) * OUTBOX_PAGE_SIZE
        })
        const total = rows.length > 0 ? rows[0]!.total_rows : (yield* countRows(status ?? null)).n
        return makePage<OutboxMessage>({
          rows: rows.map((r) => ({
            id: r.id,
            channel: r.channel,
            kind: r.kind,
            recipient: r.recipient,
            subject: r.subject,
            status: r.status,
            attempts: r.attempts,
            last_error: r.last_error,
            created_at: r.created_at.toISOString(),
            next_attempt_at: r.status === "pending" ? r.next_attempt_at.toISOString() : null,
            sent_at: r.sent_at === null ? null : r.sent_at.toISOString(),
            updated_at: r.updated_at.toISOString()
          })),
          total,
          page: pageNo,
          perPage: OUTBOX_PAGE_SIZE,
          baseUrl: `${config.publicUrl}/v1/admin/outbox`,
          query: [["status", status]]
        })
      }).pipe(Effect.orDie)

    const depthRows = SqlSchema.findAll({
      Request: Schema.DateFromSelf,
      Result: Schema.Struct({
        channel: Schema.String,
        kind: Schema.String,
        status: Schema.Literal("pending", "failed"),
        n: Schema.Int,
        oldest_seconds: Schema.Number
      }),
      execute: (now) => sql`
        select channel, kind, status, count(*)::int as n,
               greatest(0, extract(epoch from (${now}::timestamptz - min(created_at))))::float8 as oldest_seconds
        from outbox where status in ('pending', 'failed')
        group by channel, kind, status`
    })
    /** the depth of [D102], read when /metrics is scraped; a failed read keeps the last figures */
    const depth: Effect.Effect<ReadonlyArray<OutboxDepthRow> | undefined> = clock.now.pipe(
      Effect.flatMap(depthRows),
      Effect.map((rows) =>
        rows.map((r): OutboxDepthRow => ({ channel: r.channel, kind: r.kind, status: r.status, count: r.n, oldestSeconds: r.oldest_seconds }))
      ),
      // a slow database does not hold the scrape
      Effect.timeoutTo({ duration: "2 seconds", onTimeout: () => undefined, onSuccess: (rows) => rows }),
      Effect.catchAllCause((cause) => Effect.as(Effect.logWarning("outbox: depth not read for the metrics", cause), undefined))
    )
    metrics.outboxDepthFrom(() => Runtime.runPromise(runtime)(depth))

    return {
      enqueue,
      enqueueMail,
      enqueueMails,
      wake,
      sendDue,
      purgeSent,
      listPage,
      /** another room's channel (webhooks of [D101]) registers how its messages are delivered */
      registerDelivery: (channel: string, delivery: Delivery) => Effect.sync(() => void deliveries.set(channel, delivery))
    } as const
  })
}) {}
