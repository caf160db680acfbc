import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { Catalog } from "../catalog/Catalog.ts"
import { AppClock } from "../platform/Clock.ts"
import { RateLimiter } from "../platform/RateLimiter.ts"

/** What one run of the jobs of [D80] did. */
export interface JobsReport {
  /** another instance held the jobs lock: this run did nothing */
  readonly skipped: boolean
  readonly expired: number
  readonly renewalsCreated: number
  readonly invoicesCancelled: number
  readonly promoUsesReleased: number
}

/**
 * The key of the transaction-level advisory lock that one run holds, so that two instances
 * (or two runs at once) never work side by side. Any constant bigint unique to this job.
 */
export const JOBS_LOCK_KEY = 4_080_001

/** [D80]: a renewal invoice is created this long before a service's expiry. */
export const RENEWAL_WINDOW_MS = 3 * 86_400_000

const skipped: JobsReport = { skipped: true, expired: 0, renewalsCreated: 0, invoicesCancelled: 0, promoUsesReleased: 0 }

/**
 * One run of the jobs of [D80], in one transaction holding an advisory lock:
 * (a) active or suspended services past `expires_at` become `expired`;
 * (b) each `auto_renew` active service expiring within 3 days gets one pending renewal invoice
 *     (the unique (service_id, renewal_of_expiry) index makes a second run a no-op);
 * (c) pending invoices past `due_date` become `cancelled` and give their promo use back — the
 *     status change and the give-back commit together, so a use is never given back twice.
 * Safe to run twice, and twice at once.
 */
export const runJobsOnce: Effect.Effect<JobsReport, never, SqlClient.SqlClient | AppClock> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const clock = yield* AppClock
  const catalog = yield* Catalog

  const run = Effect.gen(function*() {
    const [lock] = yield* sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(${sql.literal(String(JOBS_LOCK_KEY))}) as locked`
    if (!lock?.locked) return skipped
    const now = yield* clock.now

    const expired = yield* sql<{ id: number }>`
      update services set status = 'expired', updated_at = ${now}
      where status in ('active', 'suspended') and expires_at <= ${now}
      returning id`

    const renewalHorizon = new Date(now.getTime() + RENEWAL_WINDOW_MS)
    const renewals = yield* sql<{ id: number }>`
      insert into invoices (user_id, service_id, plan_id, cycle_id, amount, discount, currency, status, gateway,
                            renewal_of_expiry, due_date, created_at)
      select s.user_id, s.id, s.plan_id, s.cycle_id, c.price, 0, c.currency, 'pending', 'manual',
             s.expires_at, s.expires_at, ${now}
      from services s join billing_cycles c on c.id = s.cycle_id
      where s.status = 'active' and s.auto_renew
        and s.expires_at > ${now} and s.expires_at <= ${renewalHorizon}
        -- an invoice already waiting for this service (a trial's order) is the renewal
        and not exists (select 1 from invoices w where w.service_id = s.id and w.status = 'pending')
      order by s.id
      on conflict (service_id, renewal_of_expiry) where renewal_of_expiry is not null do nothing
      returning id`

    const cancelled = yield* sql<{ id: number; promo_code_id: number | null }>`
      update invoices set status = 'cancelled'
      where status = 'pending' and due_date < ${now}
      returning id, promo_code_id`
    let released = 0
    for (const invoice of cancelled) {
      if (invoice.promo_code_id !== null) {
        yield* catalog.releasePromoUse(invoice.promo_code_id)
        released += 1
      }
    }

    return {
      skipped: false,
      expired: expired.length,
      renewalsCreated: renewals.length,
      invoicesCancelled: cancelled.length,
      promoUsesReleased: released
    } satisfies JobsReport
  })

  return yield* sql.withTransaction(run).pipe(Effect.tap(() => RateLimiter.purgeExpired))
}).pipe(Effect.orDie, Effect.provide(Catalog.Live))

/**
 * The scheduler of [D80]: a run shortly after start, then every 60 seconds. A failed run is
 * logged and the next one comes as usual; it never brings the server down. Across instances the
 * advisory lock lets one run at a time do the work.
 */
export const BillingJobs = Layer.scopedDiscard(
  Effect.sleep("5 seconds").pipe(
    Effect.zipRight(
      runJobsOnce.pipe(
        Effect.tap((report) =>
          report.skipped
            ? Effect.logDebug("billing jobs: another instance holds the lock")
            : Effect.logDebug("billing jobs done", report)
        ),
        Effect.catchAllCause((cause) => Effect.logError("billing jobs failed", cause)),
        Effect.repeat(Schedule.spaced("60 seconds"))
      )
    ),
    Effect.forkScoped
  )
)
