import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D95]: quota periods. Plans carry `usage_reset`: `monthly` (calendar months, UTC; the default
 * and what every plan had so far), `billing_day` (a period starts each month on the day of the
 * month the service started, clamped to the month's last day) or `never` (one period for the life
 * of the service). `usage_records.period` keeps the start date of the service's period; rows
 * written so far are calendar months, which is what `monthly` keeps; the check that a period
 * starts on the 1st goes.
 * A plan changing its reset kind changes every peer's period: the node change log gets an
 * "everything" row, as for a change of the limit ([D92]).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table plans add column usage_reset text not null default 'monthly'
      check (usage_reset in ('monthly', 'billing_day', 'never'));
    alter table usage_records drop constraint usage_records_period_check;

    create or replace function vpn_log_everything() returns trigger language plpgsql as $$
    begin
      if new.bandwidth_limit_gb is distinct from old.bandwidth_limit_gb
         or new.usage_reset is distinct from old.usage_reset then
        perform vpn_log_change(null, null, null);
      end if;
      return null;
    end $$;
    drop trigger plans_vpn_log on plans;
    create constraint trigger plans_vpn_log after update of bandwidth_limit_gb, usage_reset on plans
      deferrable initially deferred for each row execute function vpn_log_everything();
  `)
})
