import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 34, the third review's money holes:
 * - `invoices.credited_amount`: what paid plan changes credited of this paid invoice's unused value
 *   ([D108]); it counts against what can still be refunded ([D110]), and the CHECK keeps refunds
 *   and credits together within what was paid.
 * - `invoices.change_source_id`: the paid invoice whose unused value a change invoice credits
 *   (null: nothing was paid for the period); paying the change consumes it once.
 * - `stripe_checkout_sessions.closed_at`: the session was expired at Stripe because its invoice is
 *   no longer pending (cancelled or paid otherwise), so nobody pays there any more ([D123]).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table invoices
      add column credited_amount numeric(12, 2) not null default 0,
      add column change_source_id integer references invoices (id) on delete set null;
    alter table invoices drop constraint invoices_refunds_within_paid;
    alter table invoices add constraint invoices_refunds_within_paid
      check (refunded_amount >= 0 and credited_amount >= 0 and refunded_amount + credited_amount <= amount + balance_applied);

    alter table stripe_checkout_sessions add column closed_at timestamptz;
    create index stripe_checkout_sessions_open on stripe_checkout_sessions (invoice_id)
      where closed_at is null and payment_intent is null;
  `)
})
