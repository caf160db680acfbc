import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 34, the node change log ([D92], [D103], [D106]):
 * - A change of a plan's limits (`bandwidth_limit_gb`, `usage_reset`, `speed_limit_mbps`,
 *   `quota_action`, `throttle_mbps`) was an "everything" row: every peer of every server came
 *   back as changed in `?since=`. It becomes a row naming the plan (`plan_id`): the peers of the
 *   users with a live service on that plan.
 * - A device's OpenVPN secret replaced (rotate, password reset, revoke-all) was no change at all,
 *   so its open sessions lasted: it is logged under `ovpn-rotated:<username>` (a WireGuard key
 *   never holds a colon), which the node list answers as the username's entry and names in
 *   `meta.rotated` (the agent ends its sessions).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table vpn_peer_changes add column plan_id integer;

    create or replace function vpn_log_everything() returns trigger language plpgsql as $$
    begin
      if new.bandwidth_limit_gb is distinct from old.bandwidth_limit_gb
         or new.usage_reset is distinct from old.usage_reset
         or new.speed_limit_mbps is distinct from old.speed_limit_mbps
         or new.quota_action is distinct from old.quota_action
         or new.throttle_mbps is distinct from old.throttle_mbps then
        perform pg_advisory_xact_lock(4080091);
        insert into vpn_peer_changes (plan_id) values (new.id);
        perform pg_notify('vpn_peer_changes', '');
      end if;
      return null;
    end $$;

    create function vpn_log_rotated_credentials() returns trigger language plpgsql as $$
    begin
      perform vpn_log_change(null, null, 'ovpn-rotated:' || new.username);
      return null;
    end $$;
    create constraint trigger vpn_credentials_rotated_log after update of secret_hash on vpn_credentials
      deferrable initially deferred for each row
      when (new.secret_hash is distinct from old.secret_hash)
      execute function vpn_log_rotated_credentials();
  `)
})
