import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { formatCents, toCents } from "../catalog/Money.ts"
import { Notifications } from "../outbox/Notifications.ts"
import { AppClock } from "../platform/Clock.ts"
import { BusinessRuleViolation, NotFound, ValidationError } from "../platform/Errors.ts"
import { Cancellation } from "../services/Cancellation.ts"
import { DomainEvents } from "../events/DomainEvents.ts"
import { Balance } from "./Balance.ts"
import { GatewaysLive, PaymentGateways } from "./Gateways.ts"
import { CreditNote } from "./Domain.ts"
import { invoiceEvent, Invoices } from "./Invoices.ts"

const CreditNoteRow = Schema.Struct({ ...CreditNote.fields, created_at: Schema.DateFromSelf })

export const notRefundable = () => new BusinessRuleViolation({ message: "Invoice is not refundable." })

export interface RefundRequest {
  /** cents; none: all that is not yet refunded */
  readonly amount: Option.Option<number>
  readonly to: "balance" | "gateway"
  readonly reason: string
  readonly endService: boolean
}

/**
 * [D110] Refunds as credit notes. The invoice row is locked for the whole refund, so two refunds
 * of one invoice take turns and the second sees what the first refunded: together they never
 * exceed what was paid (the gateway's `amount` plus `balance_applied`) less what paid plan changes
 * credited of it ([D108]; the table's CHECK is the last line). `to: balance` credits the user's
 * balance ([D109]); `to: gateway` asks the invoice's gateway for a refund of its payment (`manual`
 * and `balance` cannot: 422 `errors.to`).
 */
export class Refunds extends Effect.Service<Refunds>()("billing/Refunds", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const clock = yield* AppClock
    const invoices = yield* Invoices
    const balance = yield* Balance
    const gateways = yield* PaymentGateways
    const cancellation = yield* Cancellation
    const domainEvents = yield* DomainEvents
    const notifications = yield* Notifications

    const noteRows = SqlSchema.findAll({
      Request: Schema.Number,
      Result: CreditNoteRow,
      execute: (invoiceId) => sql`
        select c.id, i.uuid::text as invoice_uuid, c.amount::text as amount, c.currency, c.refund_to as to, c.reason, c.created_at
        from credit_notes c join invoices i on i.id = c.invoice_id
        where c.invoice_id = ${invoiceId} order by c.id`
    })
    const notesOf = (invoiceId: number) => noteRows(invoiceId).pipe(Effect.orDie)

    const insertNote = SqlSchema.single({
      Request: Schema.Struct({
        invoiceId: Schema.Number,
        invoiceUuid: Schema.String,
        amount: Schema.String,
        currency: Schema.String,
        to: Schema.String,
        reason: Schema.String,
        gatewayRefundId: Schema.NullOr(Schema.String),
        now: Schema.DateFromSelf
      }),
      Result: CreditNoteRow,
      execute: ({ amount, currency, gatewayRefundId, invoiceId, invoiceUuid, now, reason, to }) => sql`
        with c as (
          insert into credit_notes (invoice_id, amount, currency, refund_to, reason, gateway_refund_id, created_at)
          values (${invoiceId}, ${amount}, ${currency}, ${to}, ${reason},
                  ${gatewayRefundId}, ${now})
          returning id, amount, currency, refund_to, reason, created_at
        ), i as (
          update invoices set refunded_amount = refunded_amount + ${amount} where id = ${invoiceId}
        )
        select c.id, ${invoiceUuid}::text as invoice_uuid, c.amount::text as amount, c.currency, c.refund_to as to, c.reason, c.created_at from c`
    })
    const refund = (uuid: string, request: RefundRequest) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const found = yield* invoices.byUuid(uuid)
            if (Option.isNone(found)) return yield* Effect.fail(new NotFound())
            const invoice = yield* Effect.flatMap(
              invoices.lock(found.value.id),
              Option.match({
                onNone: () => Effect.fail(new NotFound()),
                onSome: Effect.succeed
              })
            )
            if (invoice.status !== "paid") return yield* Effect.fail(notRefundable())
            const notes = yield* notesOf(invoice.id)
            const refunded = notes.reduce((sum, n) => sum + toCents(n.amount), 0)
            const toGateway = notes.filter((n) => n.to === "gateway").reduce((sum, n) => sum + toCents(n.amount), 0)
            // [D110] (issue 34): what plan changes already credited of its unused value is not paid twice
            const paid = toCents(invoice.amount) + toCents(invoice.balance_applied) - toCents(invoice.credited_amount)
            const gateway = request.to === "gateway" ? gateways.get(invoice.gateway) : Option.none()
            const refundVia = Option.flatMap(gateway, (g) => Option.fromNullable(g.refund))
            if (request.to === "gateway" && Option.isNone(refundVia)) {
              return yield* Effect.fail(ValidationError.field("to", `The ${invoice.gateway} gateway cannot refund: refund to the balance instead.`))
            }
            if (request.to === "balance" && invoice.user_id === null) {
              return yield* Effect.fail(ValidationError.field("to", "The invoice's user no longer exists: refund through the gateway instead."))
            }
            // through the gateway only what it took; to the balance anything paid and not yet refunded
            const left = request.to === "gateway" ? Math.min(paid - refunded, toCents(invoice.amount) - toGateway) : paid - refunded
            const cents = Option.getOrElse(request.amount, () => left)
            if (cents <= 0 || cents > left) {
              return yield* Effect.fail(
                ValidationError.field("amount", `The amount must be between 0.01 and ${formatCents(Math.max(left, 0))} (what is left to refund).`)
              )
            }
            const now = yield* clock.now
            const gatewayRefund = Option.isSome(refundVia)
              ? Option.some(
                  yield* refundVia
                    .value({ invoiceUuid: invoice.uuid, transactionId: invoice.transaction_id, amount: formatCents(cents), currency: invoice.currency })
                    .pipe(
                      // nothing the gateway could pay back (paid by an operator's hand): the caller's `to` is the problem
                      Effect.catchTag("RefundUnavailable", (e) => Effect.fail(ValidationError.field("to", e.message)))
                    )
                )
              : Option.none()
            const note = yield* insertNote({
              invoiceId: invoice.id,
              invoiceUuid: invoice.uuid,
              amount: formatCents(cents),
              currency: invoice.currency,
              to: request.to,
              reason: request.reason,
              gatewayRefundId: Option.getOrNull(Option.map(gatewayRefund, (r) => r.refundId)),
              now
            }).pipe(Effect.orDie)
            if (request.to === "balance" && invoice.user_id !== null) {
              yield* Effect.catchTag(
                balance.adjust({ userId: invoice.user_id, currency: invoice.currency, cents, reason: `Refund: ${request.reason}`, invoiceId: invoice.id }),
                "ValidationError",
                Effect.die
              )
            }
            // [D110] end_service: the invoice's service is cancelled at once ([D91]: access stops)
            if (request.endService && invoice.service_id !== null) {
              yield* Effect.catchTag(cancellation.now(invoice.service_id, Option.none()), "BusinessRuleViolation", () => Effect.void)
            }
            yield* domainEvents.emit({
              type: "invoice.refunded",
              data: {
                ...invoiceEvent(invoice),
                refunded_amount: formatCents(refunded + cents),
                credit_note: {
                  id: note.id,
                  amount: note.amount,
                  currency: note.currency,
                  to: note.to,
                  reason: note.reason,
                  created_at: note.created_at.toISOString()
                }
              }
            })
            if (invoice.user_id !== null) {
              // [D96]: the refund notice, with the refund
              yield* notifications.notify({
                userId: invoice.user_id,
                kind: "refund-issued",
                dedupeKey: `refund-issued:${note.id}`,
                view: {
                  invoice_uuid: invoice.uuid,
                  credit_note_id: note.id,
                  amount: note.amount,
                  currency: note.currency,
                  refunded_to: request.to === "balance" ? "balance" : "gateway",
                  gateway: invoice.gateway,
                  reason: request.reason
                }
              })
            }
            return note
          })
        )
        .pipe(
          Effect.catchTag("SqlError", Effect.die),
          Effect.tap(() => Effect.zipRight(domainEvents.wake, notifications.wake))
        )

    return { refund } as const
  }),
  dependencies: [Invoices.Default, Balance.Default, GatewaysLive, Cancellation.Default, Notifications.Default]
}) {}
