import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D111] `cancel_at`: a service cancelled at its period's end (null unless so).
 * [D108] a downgrade scheduled for the period's end: the plan and cycle the service continues on.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table services add column cancel_at timestamptz;
    alter table services add column scheduled_plan_id integer references plans (id);
    alter table services add column scheduled_cycle_id integer references billing_cycles (id);
    alter table services add constraint services_scheduled_change_whole
      check ((scheduled_plan_id is null) = (scheduled_cycle_id is null));
  `)
})
