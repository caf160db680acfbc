import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Catalog } from "../catalog/Catalog.ts"
import { toCents } from "../catalog/Money.ts"
import type { RenewalFailedView } from "../outbox/NoticeViews.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { AppClock } from "../platform/Clock.ts"
import { AppConfig, DUNNING_RETRY_DAYS_DEFAULT } from "../platform/Config.ts"
import { Services } from "../services/Services.ts"
import { Balance } from "./Balance.ts"
import { Funding } from "./Funding.ts"
import { type OffSessionCharge, StripeGateway } from "./gateways/Stripe.ts"
import { StripeCustomers } from "./gateways/StripeCustomers.ts"
import { Invoices } from "./Invoices.ts"
import { Payments } from "./Payments.ts"
import { ServiceId, UserId } from "../platform/Ids.ts"

const DAY_MS = 86_400_000
/** a claimed attempt is the claimer's this long; a crashed run's claim comes back after it (the same key charges once) */
const LEASE_MS = 10 * 60_000

/** a renewal in dunning, as an attempt needs it */
const DunningRow = Schema.Struct({
  invoice_id: Schema.Int,
  service_id: ServiceId,
  user_id: UserId,
  expires_at: Schema.DateFromSelf,
  grace_until: Schema.DateFromSelf,
  attempts: Schema.Int
})
type DunningRow = typeof DunningRow.Type

const DueRenewal = Schema.Struct({ invoice_id: Schema.Int, service_id: ServiceId, user_id: UserId, expires_at: Schema.DateFromSelf })

/** what one attempt came to */
export type AttemptOutcome = "paid" | "retry" | "expired" | "closed"

/**
 * [D124] Renewals that do not fail quietly. For an `auto_renew` service whose renewal invoice of
 * [D80] is still pending at `expires_at`:
 * - the service goes into `grace` until the last retry (`expires_at` + the last of
 *   DUNNING_RETRY_DAYS), the invoice due then (`enterGrace`);
 * - at `expires_at` and at each retry an attempt (`attempt`) pays it from the balance when it
 *   covers it, else charges the newest card the user agreed to keep, off-session at Stripe;
 * - each failed attempt sends a notice with the invoice's link in the portal; after the last one
 *   the invoice is cancelled and the service expired.
 * A payment in grace by any gateway ends it (the service is active again from its old
 * `expires_at`, [D35]); the next attempt finds the invoice paid and closes the dunning.
 */
export class Dunning extends Effect.Service<Dunning>()("billing/Dunning", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const config = yield* AppConfig
    const invoices = yield* Invoices
    const services = yield* Services
    const funding = yield* Funding
    const payments = yield* Payments
    const balance = yield* Balance
    const notifications = yield* Notifications
    const customers = yield* StripeCustomers
    const stripe = yield* StripeGateway
    const catalog = yield* Catalog
    const retryDays = config.dunningRetryDays ?? DUNNING_RETRY_DAYS_DEFAULT
    const retryAt = (expiresAt: Date, n: number) => new Date(expiresAt.getTime() + Math.round(retryDays[n]! * DAY_MS))
    const graceUntilOf = (expiresAt: Date) => retryAt(expiresAt, retryDays.length - 1)

    const dueRenewals = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, limit: Schema.Int }),
      Result: DueRenewal,
      execute: ({ limit, now }) => sql`
        select i.id as invoice_id, i.service_id, i.user_id, i.renewal_of_expiry as expires_at from invoices i
        where i.status = 'pending' and i.renewal_of_expiry is not null and i.renewal_of_expiry <= ${now}
          and i.service_id is not null and i.user_id is not null
          and not exists (select 1 from renewal_dunning d where d.invoice_id = i.id)
        order by i.renewal_of_expiry, i.id limit ${limit} for update of i skip locked`
    })

    /**
     * One batch: the pending renewals whose expiry came go into dunning; their services into
     * grace when they still renew (active, `auto_renew`, that expiry). A renewal whose service
     * does not is only marked seen: it is cancelled at its due date as before. How many were seen.
     */
    const enterGrace = (limit: number, asOf?: Date) =>
      Effect.gen(function* () {
        const now = asOf ?? (yield* clock.now)
        const due = yield* dueRenewals({ now, limit })
        if (due.length === 0) return 0
        const entered = new Set(
          yield* services.enterGrace(due.map((d) => ({ serviceId: d.service_id, expiresAt: d.expires_at, graceUntil: graceUntilOf(d.expires_at) })))
        )
        const rows = due.map((d) => ({
          invoice_id: d.invoice_id,
          service_id: d.service_id,
          user_id: d.user_id,
          expires_at: d.expires_at.toISOString(),
          grace_until: graceUntilOf(d.expires_at).toISOString(),
          // the first attempt is at expires_at ([D124]: "charged off-session at expires_at")
          next_attempt_at: entered.has(d.service_id) ? d.expires_at.toISOString() : null
        }))
        yield* sql`
          insert into renewal_dunning (invoice_id, service_id, user_id, expires_at, grace_until, next_attempt_at)
          select invoice_id, service_id, user_id, expires_at, grace_until, next_attempt_at
          from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            as r(invoice_id int, service_id int, user_id int, expires_at timestamptz, grace_until timestamptz, next_attempt_at timestamptz)
          on conflict (invoice_id) do nothing`
        // the invoice stays payable through the grace: it is due at its end
        const graced = rows.filter((r) => r.next_attempt_at !== null)
        if (graced.length > 0) {
          yield* sql`
            update invoices i set due_date = r.grace_until
            from jsonb_to_recordset(${JSON.stringify(graced)}::jsonb) as r(invoice_id int, grace_until timestamptz)
            where i.id = r.invoice_id`
        }
        return due.length
      }).pipe(Effect.orDie)

    const claimDueRows = SqlSchema.findAll({
      Request: Schema.Struct({ limit: Schema.Number, now: Schema.DateFromSelf }),
      Result: DunningRow,
      execute: ({ limit, now }) => sql`
        update renewal_dunning set next_attempt_at = ${new Date(now.getTime() + LEASE_MS)}
        where invoice_id in (select invoice_id from renewal_dunning where next_attempt_at <= ${now}
                             order by next_attempt_at limit ${limit} for update skip locked)
        returning invoice_id, service_id, user_id, expires_at, grace_until, attempts`
    })
    /** up to `limit` attempts that are due, claimed for LEASE_MS (another run skips them) */
    const claimDue = (limit: number) => Effect.flatMap(clock.now, (now) => claimDueRows({ limit, now })).pipe(Effect.orDie)

    const close = (invoiceId: number) =>
      sql`update renewal_dunning set next_attempt_at = null where invoice_id = ${invoiceId}`.pipe(Effect.asVoid, Effect.orDie)

    /** the balance, then the newest saved card; a charge that failed says why */
    const collect = (row: DunningRow) =>
      Effect.gen(function* () {
        const funded = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              const invoice = yield* invoices.lock(row.invoice_id)
              if (Option.isNone(invoice) || invoice.value.status !== "pending") return "closed" as const
              return yield* funding.fund(invoice.value)
            })
          )
          .pipe(Effect.orDie)
        if (funded !== "pending") return { _tag: "Done", outcome: funded === "paid" ? "paid" : "closed" } as const
        const invoice = Option.getOrThrow(yield* invoices.byId(row.invoice_id))
        const card = (yield* customers.cardsOf(row.user_id))[0]
        if (card === undefined || Option.isNone(stripe)) return { _tag: "Failed", reason: "no_saved_card", card: null } as const
        const charge: OffSessionCharge = yield* stripe.value.chargeOffSession({
          customerId: card.customer_id,
          methodId: card.method_id,
          amount: invoice.amount,
          currency: invoice.currency,
          invoiceUuid: invoice.uuid,
          idempotencyKey: `renewal:${invoice.uuid}:${row.attempts}`
        })
        if (charge._tag === "Failed") {
          return {
            _tag: "Failed",
            reason: charge.declined ? "card_declined" : "charge_failed",
            card: { brand: card.brand, last4: card.last4 },
            // the processor's own words, for the operator only (never in a notice, [D120])
            detail: charge.message
          } as const
        }
        const paid = yield* payments
          .markPaid(invoice.id, {
            transactionId: charge.paymentIntent,
            gateway: "stripe",
            payload: { payment_intent: charge.paymentIntent, off_session: true, payment_method: card.method_id }
          })
          .pipe(
            Effect.as("paid" as const),
            // paid meanwhile another way: the charge is money received, kept on the balance ([D123])
            Effect.catchTag("InvoiceNotPayable", () =>
              sql
                .withTransaction(
                  balance.adjust({
                    userId: row.user_id,
                    currency: invoice.currency,
                    cents: toCents(invoice.amount),
                    reason: "Renewal charge for a closed invoice",
                    invoiceId: invoice.id
                  })
                )
                .pipe(Effect.as("closed" as const), Effect.orDie)
            ),
            Effect.catchTag("ValidationError", () => Effect.succeed("closed" as const))
          )
        return { _tag: "Done", outcome: paid } as const
      })

    /** a failed attempt: its notice, then the next retry, or after the last one the end of the grace */
    const failed = (row: DunningRow, failure: Pick<RenewalFailedView, "reason" | "card"> & { readonly detail?: string }) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const attempts = row.attempts + 1
            // the next retry of the schedule still ahead (retries missed while no job ran are not made
            // late, one after the other); none left: the grace is over
            const now = yield* clock.now
            const next = retryDays.map((_, n) => retryAt(row.expires_at, n)).find((t, n) => n >= attempts - 1 && t > now) ?? null
            const final = next === null
            yield* sql`update renewal_dunning set attempts = ${attempts}, next_attempt_at = ${next}, last_error = ${failure.detail === undefined ? failure.reason : `${failure.reason}: ${failure.detail}`}
          where invoice_id = ${row.invoice_id}`
            const invoice = Option.getOrThrow(yield* invoices.byId(row.invoice_id))
            if (final) {
              const cancelled = yield* invoices.cancelPending(row.invoice_id)
              if (Option.isSome(cancelled)) {
                yield* balance.returnFrom({
                  id: row.invoice_id,
                  userId: row.user_id,
                  balanceApplied: cancelled.value.balance_applied,
                  currency: invoice.currency
                })
              }
              const gone = yield* services.expireGrace(row.service_id)
              if (Option.isSome(gone)) {
                const { plan } = yield* Effect.orDie(catalog.anyPlanAndCycle(gone.value.plan_id, gone.value.cycle_id))
                yield* notifications.notify({
                  userId: row.user_id,
                  kind: "expired",
                  dedupeKey: `expired:${gone.value.id}:${gone.value.expires_at.toISOString()}`,
                  view: { service_id: gone.value.id, plan_name: plan.name, expires_at: gone.value.expires_at }
                })
              }
            }
            yield* notifications.notify({
              userId: row.user_id,
              kind: "renewal-failed",
              dedupeKey: `renewal-failed:${invoice.uuid}:${attempts}`,
              view: {
                invoice_uuid: invoice.uuid,
                amount: invoice.amount,
                currency: invoice.currency,
                service_id: row.service_id,
                reason: failure.reason,
                card: failure.card,
                attempt: attempts,
                grace_until: row.grace_until,
                next_attempt_at: next,
                final
              }
            })
            return final ? ("expired" as const) : ("retry" as const)
          })
        )
        .pipe(Effect.orDie)

    /** [D124]: one attempt of a claimed renewal (its charge outside any transaction) */
    const attempt = (row: DunningRow): Effect.Effect<AttemptOutcome> =>
      Effect.gen(function* () {
        const service = yield* services.findById(row.service_id)
        // the grace ended another way (a payment of another invoice, an admin): nothing more to do
        if (Option.isNone(service) || service.value.status !== "grace") {
          yield* close(row.invoice_id)
          return "closed" as const
        }
        const result = yield* collect(row)
        if (result._tag === "Done") {
          yield* close(row.invoice_id)
          return result.outcome
        }
        return yield* failed(row, result)
      }).pipe(Effect.tap(() => notifications.wake))

    return { enterGrace, claimDue, attempt } as const
  }),
  dependencies: [
    Invoices.Default,
    Services.Default,
    Funding.Default,
    Payments.Default,
    Balance.Default,
    Notifications.Default,
    StripeCustomers.Default,
    StripeGateway.Live,
    Catalog.Default
  ]
}) {}
