import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { BusinessRuleViolation, ValidationError } from "../platform/Errors.ts"
import { AppClock } from "../platform/Clock.ts"

export const NOT_PAYABLE = "Invoice is not payable."
const DAY_MS = 86_400_000

export type PaidOutcome = "paid" | "already-paid"

const sqlState = (e: unknown) =>
  e instanceof SqlError && typeof e.cause === "object" && e.cause !== null && "code" in e.cause
    ? String((e.cause as { code: unknown }).code)
    : ""

/** deadlock detected, serialization failure: safe to run the whole transaction again */
const isTransient = (e: unknown) => ["40P01", "40001"].includes(sqlState(e))

const isUniqueViolation = (e: unknown) =>
  e instanceof SqlError && typeof e.cause === "object" && e.cause !== null && "code" in e.cause &&
  (e.cause as { code: unknown }).code === "23505"

/**
 * Paying an invoice ([D35], [D40]): marking it paid, recording the payment event and
 * activating or extending exactly one service happen in one transaction, with the invoice row
 * locked, so replays and concurrent payments change things once.
 */
export class Payments extends Context.Tag("billing/Payments")<Payments, {
  readonly markPaid: (
    invoiceId: number,
    options: { readonly transactionId: string | null; readonly gateway: string; readonly payload?: unknown }
  ) => Effect.Effect<PaidOutcome, BusinessRuleViolation | ValidationError>
}>() {
  static readonly Live = Layer.effect(
    Payments,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const clock = yield* AppClock

      const activate = (invoice: { id: number; user_id: number | null; service_id: number | null; plan_id: number; cycle_id: number; duration_days: number }, now: Date) =>
        Effect.gen(function*() {
          if (invoice.user_id === null) return
          // the user's payments take turns: two invoices paid at once cannot both start a new service
          yield* sql`select id from users where id = ${invoice.user_id} for update`
          const extend = (from: Date) => new Date(from.getTime() + invoice.duration_days * DAY_MS)
          if (invoice.service_id !== null) {
            const [service] = yield* sql<{ id: number; expires_at: Date }>`
              select id, expires_at from services where id = ${invoice.service_id} for update`
            if (service) {
              const base = service.expires_at.getTime() > now.getTime() ? service.expires_at : now
              yield* sql`update services set expires_at = ${extend(base)}, 
                status = case when status = 'suspended' then status else 'active' end, updated_at = ${now}
              where id = ${service.id}`
              return
            }
          }
          const [current] = yield* sql<{ id: number; expires_at: Date }>`
            select id, expires_at from services
            where user_id = ${invoice.user_id} and plan_id = ${invoice.plan_id}
              and status in ('active', 'suspended') and expires_at > ${now}
            order by created_at desc, id desc limit 1 for update`
          if (current) {
            yield* sql`update services set expires_at = ${extend(current.expires_at)}, updated_at = ${now} where id = ${current.id}`
            yield* sql`update invoices set service_id = ${current.id} where id = ${invoice.id}`
            return
          }
          const [created] = yield* sql<{ id: number }>`
            insert into services (user_id, plan_id, cycle_id, status, starts_at, expires_at, auto_renew, created_at, updated_at)
            values (${invoice.user_id}, ${invoice.plan_id}, ${invoice.cycle_id}, 'active', ${now}, ${extend(now)}, true, ${now}, ${now})
            returning id`
          yield* sql`update invoices set service_id = ${created!.id} where id = ${invoice.id}`
        })

      const markPaid = (invoiceId: number, options: { transactionId: string | null; gateway: string; payload?: unknown }) =>
        sql.withTransaction(Effect.gen(function*() {
          const now = yield* clock.now
          const [invoice] = yield* sql<{ id: number; user_id: number | null; service_id: number | null; plan_id: number; cycle_id: number; status: string; transaction_id: string | null; duration_days: number }>`
            select i.id, i.user_id, i.service_id, i.plan_id, i.cycle_id, i.status, i.transaction_id, c.duration_days
            from invoices i join billing_cycles c on c.id = i.cycle_id where i.id = ${invoiceId} for update of i`
          if (!invoice) return yield* Effect.fail(new BusinessRuleViolation({ message: NOT_PAYABLE }))
          if (options.transactionId !== null) {
            const [used] = yield* sql<{ invoice_id: number | null }>`
              select invoice_id from payment_events where transaction_id = ${options.transactionId}`
            if (used) {
              if (used.invoice_id === invoice.id) return "already-paid" as const
              return yield* Effect.fail(ValidationError.field("transaction_id", "The transaction id has already been taken."))
            }
          }
          if (invoice.status === "paid") return "already-paid" as const
          if (invoice.status !== "pending") return yield* Effect.fail(new BusinessRuleViolation({ message: NOT_PAYABLE }))
          if (options.transactionId !== null) {
            yield* sql`insert into payment_events (gateway, transaction_id, invoice_id, payload, created_at)
              values (${options.gateway}, ${options.transactionId}, ${invoice.id}, ${JSON.stringify(options.payload ?? {})}::jsonb, ${now})`
          }
          yield* sql`update invoices set status = 'paid', paid_at = ${now}, transaction_id = ${options.transactionId}
            where id = ${invoice.id}`
          yield* activate(invoice, now)
          return "paid" as const
        })).pipe(
          // a jobs run may lock the same service and invoice in the other order: PostgreSQL aborts
          // one side with a deadlock; the payment is simply tried again
          Effect.retry({ times: 3, while: isTransient }),
          Effect.catchIf(isUniqueViolation, () =>
            Effect.fail(ValidationError.field("transaction_id", "The transaction id has already been taken."))),
          Effect.catchTag("SqlError", (e) => Effect.die(e))
        )

      return { markPaid }
    })
  )
}
