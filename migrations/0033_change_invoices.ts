import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D108] A plan change's invoice: `change_credit` is the prorated credit of the period it replaces
 * (what was paid times the unused share), fixed when the invoice is made; paying the invoice
 * switches its service to the invoice's plan and cycle at once.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table invoices add column change_credit numeric(12, 2) check (change_credit >= 0);
    create index invoices_pending_change on invoices (service_id) where status = 'pending' and change_credit is not null;
  `)
})
