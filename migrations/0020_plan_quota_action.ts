import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D103], [D104]: speed limits on the node and throttling instead of cutting off.
 * - `plans.quota_action`: `suspend` (default; every plan so far) or `throttle`;
 *   `plans.throttle_mbps`: 1-10000, set exactly when the action is `throttle`.
 * - A change of a plan's `speed_limit_mbps`, `quota_action` or `throttle_mbps` changes the speed
 *   of each of its peers: the node change log gets an "everything" row, as for its quota ([D92]).
 *   (A service changing plan is already a change of its user, migration 0008.)
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table plans
      add column quota_action text not null default 'suspend' check (quota_action in ('suspend', 'throttle')),
      add column throttle_mbps integer check (throttle_mbps between 1 and 10000),
      add constraint plans_throttle_mbps_with_action check ((quota_action = 'throttle') = (throttle_mbps is not null));

    create or replace function vpn_log_everything() returns trigger language plpgsql as $$
    begin
      if new.bandwidth_limit_gb is distinct from old.bandwidth_limit_gb
         or new.usage_reset is distinct from old.usage_reset
         or new.speed_limit_mbps is distinct from old.speed_limit_mbps
         or new.quota_action is distinct from old.quota_action
         or new.throttle_mbps is distinct from old.throttle_mbps then
        perform vpn_log_change(null, null, null);
      end if;
      return null;
    end $$;
    drop trigger plans_vpn_log on plans;
    create constraint trigger plans_vpn_log
      after update of bandwidth_limit_gb, usage_reset, speed_limit_mbps, quota_action, throttle_mbps on plans
      deferrable initially deferred for each row execute function vpn_log_everything();
  `)
})
