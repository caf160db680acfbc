import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 8: every change of the catalogue (`plans`, `billing_cycles`), whoever writes it (the API,
 * the CLI, an operator's psql), notifies the channel `catalog_changed` once per statement; each
 * instance LISTENs and empties its catalogue cache. PostgreSQL delivers the notification when the
 * transaction commits, and drops it on rollback.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create function catalog_changed_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('catalog_changed', '');
      return null;
    end
    $$;

    create trigger plans_catalog_changed
      after insert or update or delete or truncate on plans
      for each statement execute function catalog_changed_notify();

    create trigger billing_cycles_catalog_changed
      after insert or update or delete or truncate on billing_cycles
      for each statement execute function catalog_changed_notify();
  `)
})
