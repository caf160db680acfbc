import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { RecipientsLive } from "../accounts/Contacts.ts"
import { Balance } from "../billing/Balance.ts"
import { Dunning } from "../billing/Dunning.ts"
import { Funding } from "../billing/Funding.ts"
import { GatewaysLive, PaymentGateways } from "../billing/Gateways.ts"
import { Invoices } from "../billing/Invoices.ts"
import { MailTokens } from "../accounts/MailTokens.ts"
import { TelegramLinks } from "../accounts/telegram/Links.ts"
import { Catalog } from "../catalog/Catalog.ts"
import { RateLimiter } from "../platform/RateLimiter.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig, JOBS_INTERVAL_SECONDS_DEFAULT, JOBS_PAUSE_DEFAULT } from "../platform/Config.ts"
import { pauseFor } from "../platform/Slices.ts"
import { Services } from "../services/Services.ts"
import { Schedules } from "../services/Schedule.ts"
import { PeerChanges } from "../vpn/PeerChanges.ts"
import { Usage } from "../vpn/Usage.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { OutboxSender } from "../outbox/Sender.ts"
import { DomainEventsLive } from "../webhooks/Webhooks.ts"
import { jobMetrics } from "./JobMetrics.ts"
import { JOBS_BATCH, JOBS_BATCH_FIRST, JOBS_BATCH_MIN, JOBS_BATCH_TARGET_MS, nextBatchSize } from "./Batches.ts"

/** What one run of the jobs of [D80] did. */
export interface JobsReport {
  /** another instance held the jobs lock: this run did nothing */
  readonly skipped: boolean
  readonly expired: number
  readonly renewalsCreated: number
  readonly invoicesCancelled: number
  readonly promoUsesReleased: number
  /** [D96]: notices written to the outbox (expired, expiring, renewal invoice); absent when skipped */
  readonly noticesWritten?: number
  /** [D96]: delivered outbox rows deleted past retention; absent when skipped */
  readonly outboxPurged?: number
  /** [D124]: renewals that went into dunning, and the attempts made to collect them; absent when skipped */
  readonly renewalsInDunning?: number
  readonly renewalAttempts?: number
}

/**
 * The key of the transaction-level advisory lock each batch holds, so that two instances (or
 * two runs at once) never work side by side. Any constant bigint unique to these jobs.
 */
export const JOBS_LOCK_KEY = 4_080_001

/** [D80]: a renewal invoice is created this long before a service's expiry. */
export const RENEWAL_WINDOW_MS = 3 * 86_400_000

export { JOBS_BATCH, JOBS_BATCH_FIRST, JOBS_BATCH_MIN, JOBS_BATCH_TARGET_MS, nextBatchSize }

const skipped: JobsReport = { skipped: true, expired: 0, renewalsCreated: 0, invoicesCancelled: 0, promoUsesReleased: 0 }

/**
 * One run of the jobs of [D80]; each room does its own part, batch by batch:
 * (a) services past `expires_at` become `expired` (services room);
 * (b) each auto-renewing active service expiring within 3 days gets one pending renewal
 *     invoice at its cycle's price (services room finds them, billing bills them, the catalogue
 *     prices them);
 * (c) pending invoices past `due_date` become `cancelled` and give their promo use back in the
 *     same transaction (billing, catalogue), so a use is never given back twice.
 * Each batch is a transaction holding the jobs lock; when another instance holds it, the run
 * stops. Every step finds only what is still due: safe to run twice, and twice at once.
 */
const runJobs = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const clock = yield* AppClock
  const services = yield* Services
  const invoices = yield* Invoices
  const catalog = yield* Catalog
  const mailTokens = yield* MailTokens
  const telegramLinks = yield* TelegramLinks
  const outbox = yield* OutboxSender
  const notifications = yield* Notifications
  const balance = yield* Balance
  const funding = yield* Funding
  const schedules = yield* Schedules
  const gateways = yield* PaymentGateways
  const pausePercent = (yield* AppConfig).jobsPausePercent ?? JOBS_PAUSE_DEFAULT

  const tryLock = SqlSchema.single({
    Request: Schema.Void,
    Result: Schema.Struct({ locked: Schema.Boolean }),
    execute: () => sql`select pg_try_advisory_xact_lock(${sql.literal(String(JOBS_LOCK_KEY))}) as locked`
  })
  const waitLock = sql`select pg_advisory_xact_lock(${sql.literal(String(JOBS_LOCK_KEY))})`.pipe(Effect.as({ locked: true }))

  // The first batch only tries the lock: another instance at work means this run is skipped.
  // Once started, a run waits its turn for each batch (another run's batch is short), so it
  // never stops half-way; each batch sees what the batches before it committed.
  let started = false
  /**
   * one batch in its own transaction under the lock; none when this run is skipped. After it
   * commits, the run waits `JOBS_PAUSE` percent of the batch's time (issue 27): the batches'
   * statements and JavaScript leave the cores to requests between them, whatever is due.
   */
  let size = JOBS_BATCH_FIRST
  const batch = <A>(work: (limit: number) => Effect.Effect<A>) =>
    Effect.suspend(() => {
      const start = performance.now()
      const limit = size
      return sql
        .withTransaction(
          Effect.flatMap(started ? waitLock : tryLock(undefined), ({ locked }) => {
            if (!locked) return Effect.succeedNone
            started = true
            return Effect.asSome(work(limit))
          })
        )
        .pipe(
          Effect.orDie,
          Effect.flatMap((done) => {
            if (done._tag === "None") return Effect.succeedNone
            const took = performance.now() - start
            size = nextBatchSize(limit, took)
            return Effect.as(pauseFor((took * pausePercent) / 100), Option.some({ value: done.value, limit }))
          })
        )
    })

  /** runs batches while they come back full; none when the run is skipped */
  const drain = (step: (limit: number) => Effect.Effect<number>) =>
    Effect.gen(function* () {
      let total = 0
      for (;;) {
        const done = yield* batch(step)
        if (done._tag === "None") return { skipped: true, total }
        total += done.value.value
        if (done.value.value < done.value.limit) return { skipped: false, total }
      }
    })

  // [D124] before (a): the pending renewals whose expiry came go into dunning (their services into
  // grace, not expired), then the attempts that are due (balance, saved card, notice, expiry)
  const dunning = yield* Dunning
  // one moment for both: a renewal not yet due to the dunning step is a service not yet expired to
  // step (a), however long the attempts in between take (else it would expire, never in grace)
  const dueBy = yield* clock.now
  const inDunning = yield* drain((limit) => dunning.enterGrace(limit, dueBy))
  if (inDunning.skipped) return skipped
  let renewalAttempts = 0
  for (;;) {
    const claimed = yield* batch((limit) => dunning.claimDue(limit))
    if (claimed._tag === "None") break
    // each attempt outside the batch's transaction: a card charge is a call to Stripe
    for (const row of claimed.value.value) {
      yield* dunning.attempt(row)
      renewalAttempts++
    }
    if (claimed.value.value.length < claimed.value.limit) break
  }

  let noticesWritten = 0
  // (a) with each batch, its "service expired" notices ([D96]), one per service and expiry
  const expired = yield* drain((limit) =>
    Effect.gen(function* () {
      const gone = yield* services.expireDue(limit, dueBy)
      const plans = yield* catalog.rowsOf(
        gone.map((s) => s.plan_id),
        gone.map((s) => s.cycle_id)
      )
      noticesWritten += yield* notifications.notifyMany(
        gone.map((s) => ({
          userId: s.user_id,
          kind: "expired" as const,
          dedupeKey: `expired:${s.id}:${s.expires_at.toISOString()}`,
          view: { service_id: s.id, plan_name: plans.plan(s.plan_id).name, expires_at: s.expires_at }
        }))
      )
      return gone.length
    })
  )
  if (expired.skipped) return skipped

  const now = yield* clock.now
  const horizon = new Date(now.getTime() + RENEWAL_WINDOW_MS)
  let afterId = 0
  let renewalsCreated = 0
  for (;;) {
    const step = yield* batch((limit) =>
      Effect.gen(function* () {
        const candidates = yield* services.renewalCandidates({ horizon, afterId, limit })
        // [D108]: a service with a downgrade scheduled is renewed on the new plan and cycle
        const scheduled = yield* schedules.ofMany(candidates.map((s) => s.id))
        const due = candidates.map((s) => {
          const next = scheduled.get(s.id)?.scheduled_change
          return next == null ? s : { ...s, plan_id: next.plan.id, cycle_id: next.cycle.id }
        })
        const prices = yield* catalog.rowsOf(
          due.map((s) => s.plan_id),
          due.map((s) => s.cycle_id)
        )
        const created = yield* invoices.insertRenewals(
          due.map((s) => {
            const cycle = prices.cycle(s.cycle_id)
            return {
              userId: s.user_id,
              serviceId: s.id,
              planId: s.plan_id,
              cycleId: s.cycle_id,
              amount: cycle.price,
              currency: cycle.currency,
              expiresAt: s.expires_at
            }
          })
        )
        // [D109]: each renewal takes what it can from the balance (a whole one is paid at once)
        const paidByBalance = new Set<string>()
        const withBalance = yield* balance.holders(created.map((r) => r.user_id))
        for (const renewal of created.filter((r) => withBalance.has(`${r.user_id}:${r.currency}`))) {
          const invoice = yield* invoices.byUuid(renewal.uuid)
          if (invoice._tag === "Some" && (yield* funding.fund(invoice.value)) === "paid") paidByBalance.add(renewal.uuid)
        }
        // [D96]: the renewal invoice's notice, written with it (one the balance paid has its receipt instead)
        noticesWritten += yield* notifications.notifyMany(
          created
            .filter((i) => !paidByBalance.has(i.uuid))
            .map((invoice) => ({
              userId: invoice.user_id,
              kind: "renewal-invoice" as const,
              dedupeKey: `renewal-invoice:${invoice.uuid}`,
              view: {
                invoice_uuid: invoice.uuid,
                amount: invoice.amount,
                currency: invoice.currency,
                due_date: invoice.due_date,
                service_id: invoice.service_id,
                expires_at: invoice.due_date
              }
            }))
        )
        return { created: created.length, seen: due.length, lastId: due.at(-1)?.id ?? afterId }
      })
    )
    if (step._tag === "None") break
    renewalsCreated += step.value.value.created
    afterId = step.value.value.lastId
    if (step.value.value.seen < step.value.limit) break
  }

  // [D96]: services without auto-renew expiring within 1 day, and within 3 days (but not 1), are
  // told once per window and expiry (the dedupe key holds the expiry: a renewed service is told again)
  const notices = [
    { kind: "expiry-1d" as const, from: now, to: new Date(now.getTime() + 86_400_000) },
    { kind: "expiry-3d" as const, from: new Date(now.getTime() + 86_400_000), to: new Date(now.getTime() + 3 * 86_400_000) }
  ]
  for (const notice of notices) {
    let after = 0
    for (;;) {
      const step = yield* batch((limit) =>
        Effect.gen(function* () {
          const due = yield* services.expiringWithoutRenewal({ from: notice.from, to: notice.to, afterId: after, limit })
          const plans = yield* catalog.rowsOf(
            due.map((s) => s.plan_id),
            due.map((s) => s.cycle_id)
          )
          noticesWritten += yield* notifications.notifyMany(
            due.map((s) => ({
              userId: s.user_id,
              kind: notice.kind,
              dedupeKey: `${notice.kind}:${s.id}:${s.expires_at.toISOString()}`,
              view: { service_id: s.id, plan_name: plans.plan(s.plan_id).name, expires_at: s.expires_at }
            }))
          )
          return { seen: due.length, lastId: due.at(-1)?.id ?? after }
        })
      )
      if (step._tag === "None") break
      after = step.value.value.lastId
      if (step.value.value.seen < step.value.limit) break
    }
  }

  let invoicesCancelled = 0
  let promoUsesReleased = 0
  yield* drain((limit) =>
    Effect.gen(function* () {
      const cancelled = yield* invoices.cancelOverdue(limit, dueBy)
      const promoIds = cancelled.flatMap((i) => (i.promo_code_id === null ? [] : [i.promo_code_id]))
      yield* catalog.releasePromoUses(promoIds)
      // [D109]: what the balance paid of each goes back to it, in the same transaction
      for (const i of cancelled) {
        yield* balance.returnFrom({ id: i.id, userId: i.user_id, balanceApplied: i.balance_applied, currency: i.currency })
      }
      invoicesCancelled += cancelled.length
      promoUsesReleased += promoIds.length
      return cancelled.length
    })
  )
  // [D123] (issue 34): the payment pages of invoices no longer pending close (Stripe sessions expire)
  yield* gateways.closeStale

  // the tables that only grow otherwise: counters of ended windows, spent or expired mail tokens,
  // node reports' idempotency keys older than 24 h, node change-log rows past what it keeps ([D92])
  yield* RateLimiter.purgeExpired
  yield* mailTokens.purgeSpent(now)
  // [D125]: expired Telegram link codes and sign-in records
  yield* telegramLinks.purge(now)
  yield* Usage.purgeReports
  yield* PeerChanges.prune()
  // [D96]: delivered messages past retention go; then what is due (new, or a retry) is sent.
  // Rows are claimed with SKIP LOCKED, so a sender woken on another instance never sends one twice.
  const outboxPurged = yield* outbox.purgeSent(now)
  yield* outbox.sendDue

  return {
    skipped: false,
    expired: expired.total,
    renewalsCreated,
    invoicesCancelled,
    promoUsesReleased,
    noticesWritten,
    outboxPurged,
    renewalsInDunning: inDunning.total,
    renewalAttempts
  } satisfies JobsReport
})

/** One run with its outcome, duration and rows in the metrics ([D102]). */
const recordedRun = Effect.gen(function* () {
  const jobFigures = yield* jobMetrics
  const start = performance.now()
  const seconds = () => (performance.now() - start) / 1000
  return yield* runJobs.pipe(
    Effect.tap((report) =>
      jobFigures.ran({
        skipped: report.skipped,
        seconds: seconds(),
        rows: {
          expired: report.expired,
          renewals_created: report.renewalsCreated,
          invoices_cancelled: report.invoicesCancelled,
          promo_uses_released: report.promoUsesReleased,
          notices_written: report.noticesWritten ?? 0,
          outbox_purged: report.outboxPurged ?? 0
        }
      })
    ),
    Effect.tapErrorCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.void : jobFigures.failed(seconds())))
  )
})

/** the rooms the jobs call */
const JobsRooms = Layer.mergeAll(
  Services.Default,
  Invoices.Default,
  Balance.Default,
  Funding.Default,
  Schedules.Default,
  Catalog.Default,
  MailTokens.Default,
  TelegramLinks.Default,
  OutboxSender.Default,
  Notifications.Default,
  Dunning.Default,
  GatewaysLive
).pipe(Layer.provideMerge(Layer.mergeAll(RecipientsLive, DomainEventsLive)))

/** One run on layers of its own (the CLI's `jobs run-once`, tests). */
export const runJobsOnce = recordedRun.pipe(Effect.provide(JobsRooms))

/**
 * The scheduler of [D80]: a run shortly after start, then every JOBS_INTERVAL_SECONDS (60 by
 * default; [D124]). A failed run is logged and the next one comes as usual; it never brings the
 * server down. Across instances the advisory lock lets one run at a time do the work.
 */
export const ScheduledJobs = Layer.scopedDiscard(
  Effect.flatMap(AppConfig, (config) => {
    const interval = config.jobsIntervalSeconds ?? JOBS_INTERVAL_SECONDS_DEFAULT
    return Effect.sleep(Duration.seconds(Math.min(5, interval))).pipe(
      Effect.zipRight(
        recordedRun.pipe(
          Effect.tap((report) => (report.skipped ? Effect.logDebug("jobs: another instance holds the lock") : Effect.logDebug("jobs done", report))),
          Effect.catchAllCause((cause) => Effect.logError("jobs failed", cause)),
          Effect.repeat(Schedule.spaced(Duration.seconds(interval)))
        )
      ),
      Effect.forkScoped
    )
  })
).pipe(Layer.provide(JobsRooms))
