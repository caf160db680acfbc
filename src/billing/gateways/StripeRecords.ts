import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** A Checkout Session made as an invoice's payment URL ([D112]). */
export const CheckoutSessionRow = Schema.Struct({
  invoice_id: Schema.Int,
  session_id: Schema.String,
  url: Schema.String,
  amount_minor: Schema.NumberFromString,
  currency: Schema.String,
  expires_at: Schema.DateFromSelf,
  payment_intent: Schema.NullOr(Schema.String)
})
export type CheckoutSessionRow = typeof CheckoutSessionRow.Type

const HandledEvent = Schema.Struct({ event_id: Schema.String, type: Schema.String, invoice_id: Schema.NullOr(Schema.Int) })

/**
 * The billing room's `stripe_checkout_sessions` and `stripe_events`: which session is an
 * invoice's payment URL, which payment intent paid it, which webhook events were handled.
 */
export class StripeRecords extends Effect.Service<StripeRecords>()("billing/StripeRecords", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`invoice_id, session_id, url, amount_minor::text as amount_minor, currency, expires_at, payment_intent`

    /** the invoice's newest session, and how many it has had (a new one's idempotency key) */
    const latestSession = SqlSchema.findOne({
      Request: Schema.Int,
      Result: Schema.Struct({ ...CheckoutSessionRow.fields, made: Schema.Int }),
      execute: (invoiceId) => sql`
        select ${columns}, (select count(*)::int from stripe_checkout_sessions c where c.invoice_id = ${invoiceId}) as made
        from stripe_checkout_sessions where invoice_id = ${invoiceId} order by id desc limit 1`
    })

    /** two callers racing got the same session (one idempotency key): it is stored once */
    const insertSession = SqlSchema.void({
      Request: Schema.Struct({ ...CheckoutSessionRow.fields, amount_minor: Schema.Number }),
      execute: (s) => sql`
        insert into stripe_checkout_sessions (invoice_id, session_id, url, amount_minor, currency, expires_at, payment_intent)
        values (${s.invoice_id}, ${s.session_id}, ${s.url}, ${s.amount_minor}, ${s.currency}, ${s.expires_at}, ${s.payment_intent})
        on conflict (session_id) do nothing`
    })

    const setPaymentIntent = SqlSchema.void({
      Request: Schema.Struct({ session_id: Schema.String, payment_intent: Schema.String }),
      execute: (r) => sql`update stripe_checkout_sessions set payment_intent = ${r.payment_intent} where session_id = ${r.session_id}`
    })

    /**
     * [D123] (issue 34): sessions still open at Stripe (not expired, not the one that paid, not
     * closed by us) whose invoice is no longer pending: nobody should pay there any more
     */
    const staleSessions = SqlSchema.findAll({
      Request: Schema.Struct({ now: Schema.DateFromSelf, limit: Schema.Int }),
      Result: Schema.Struct({ session_id: Schema.String }),
      execute: ({ limit, now }) => sql`
        select s.session_id from stripe_checkout_sessions s join invoices i on i.id = s.invoice_id
        where s.closed_at is null and s.payment_intent is null and s.expires_at > ${now} and i.status <> 'pending'
        order by s.id limit ${limit}`
    })

    const markClosed = SqlSchema.void({
      Request: Schema.Struct({ session_id: Schema.String, now: Schema.DateFromSelf }),
      execute: (r) => sql`update stripe_checkout_sessions set closed_at = ${r.now} where session_id = ${r.session_id}`
    })

    const handledEvent = SqlSchema.findOne({
      Request: Schema.String,
      Result: HandledEvent,
      execute: (eventId) => sql`select event_id, type, invoice_id from stripe_events where event_id = ${eventId}`
    })

    const recordEvent = SqlSchema.void({
      Request: Schema.Struct({ ...HandledEvent.fields, received_at: Schema.DateFromSelf }),
      execute: (e) => sql`
        insert into stripe_events (event_id, type, invoice_id, received_at)
        values (${e.event_id}, ${e.type}, ${e.invoice_id}, ${e.received_at}) on conflict (event_id) do nothing`
    })

    return {
      latestSession: (invoiceId: number) => Effect.orDie(latestSession(invoiceId)),
      insertSession: (row: Omit<CheckoutSessionRow, "amount_minor"> & { readonly amount_minor: number }) => Effect.orDie(insertSession(row)),
      setPaymentIntent: (sessionId: string, paymentIntent: string) => Effect.orDie(setPaymentIntent({ session_id: sessionId, payment_intent: paymentIntent })),
      staleSessions: (now: Date, limit: number) => Effect.orDie(staleSessions({ now, limit })),
      markClosed: (sessionId: string, now: Date) => Effect.orDie(markClosed({ session_id: sessionId, now })),
      handledEvent: (eventId: string) => Effect.orDie(handledEvent(eventId)),
      recordEvent: (event: typeof HandledEvent.Type & { readonly received_at: Date }) => Effect.orDie(recordEvent(event))
    } as const
  })
}) {}
