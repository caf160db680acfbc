import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D105]: changes pushed to the nodes.
 * - Every row of the node change log ([D92], migration 8) also `pg_notify`s the channel
 *   `vpn_peer_changes`; PostgreSQL delivers it when the writing transaction commits, once per
 *   transaction (same channel and payload), to every instance that LISTENs: each one then pushes
 *   the new revision to the node agents it streams to.
 * - `vpn_node_agents`: each server's node agent as the streams see it: open streams (any
 *   instance), the revision it last applied, its version and when it was last heard from.
 * - [D106]: OpenVPN credentials made or deleted (a device's) are changes of every OpenVPN
 *   server's list: a log row keyed `ovpn:<username>` (a WireGuard key never holds a colon).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create or replace function vpn_log_change(sid integer, uid integer, key text) returns void language plpgsql as $$
    begin
      perform pg_advisory_xact_lock(4080091);
      insert into vpn_peer_changes (server_id, user_id, public_key) values (sid, uid, key);
      perform pg_notify('vpn_peer_changes', '');
    end $$;

    create table vpn_node_agents (
      server_id integer primary key references servers (id) on delete cascade,
      streams integer not null default 0 check (streams >= 0),
      applied_revision bigint,
      version text check (version is null or char_length(version) <= 64),
      last_seen_at timestamptz
    );

    create function vpn_log_credentials() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' then perform vpn_log_change(null, null, 'ovpn:' || old.username);
      else perform vpn_log_change(null, null, 'ovpn:' || new.username); end if;
      return null;
    end $$;
    create constraint trigger vpn_credentials_log after insert or delete on vpn_credentials
      deferrable initially deferred for each row execute function vpn_log_credentials();
  `)
})
