import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D90] allocation and IPv6, [D92] node sync.
 * - Allocation: each peer keeps its host number (`host`, its offset in the server's subnet); a
 *   server keeps a high-water mark (`next_host`) and the hosts released below it
 *   (`vpn_free_hosts`). The lowest free host is min(released) else the mark: two index reads,
 *   whatever the number of peers. A deleted peer releases its host. `vpn_reindex_hosts` rebuilds
 *   both from the peers (here, and when an admin changes a subnet).
 * - IPv6: `servers.subnet6` (unset: IPv4 only); a peer's IPv6 address is the same host number in it.
 * - Node sync: `vpn_peer_changes`, a log with a growing revision. Rows name a key that was added,
 *   replaced or removed on a server, a user whose access may have changed (every server), a
 *   server whose grants changed, or everything (a plan's limit changed). They are written by
 *   triggers at commit, under one lock, so revisions become visible in order and a node never
 *   skips one. `period` rows mark the first poll of a month (usage limits start again).
 * - `servers.last_seen_at`: the node's last poll.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table servers
      add column subnet6 cidr check (subnet6 is null or family(subnet6) = 6),
      add column last_seen_at timestamptz,
      add column next_host bigint not null default 2;
    alter table wireguard_peers add column host bigint;

    create table vpn_free_hosts (
      server_id integer not null references servers (id) on delete cascade,
      host bigint not null,
      primary key (server_id, host)
    );

    create function vpn_reindex_hosts(sid integer) returns void language plpgsql as $$
    declare
      net cidr;
      top bigint;
    begin
      select subnet into net from servers where id = sid for update;
      update wireguard_peers set host = case when address << net then address - network(net)::inet else null end
        where server_id = sid;
      select coalesce(max(host) + 1, 2) into top from wireguard_peers where server_id = sid and host is not null;
      update servers set next_host = greatest(top, 2) where id = sid;
      delete from vpn_free_hosts where server_id = sid;
      insert into vpn_free_hosts (server_id, host)
        select sid, h from generate_series(2, top - 1) h
        where not exists (select 1 from wireguard_peers p where p.server_id = sid and p.host = h);
    end $$;
    select vpn_reindex_hosts(id) from servers;

    create function vpn_release_host() returns trigger language plpgsql as $$
    begin
      if old.host is not null then
        insert into vpn_free_hosts (server_id, host)
          select old.server_id, old.host from servers s where s.id = old.server_id and old.host < s.next_host
          on conflict do nothing;
      end if;
      return old;
    end $$;
    create trigger wireguard_peers_release after delete on wireguard_peers
      for each row execute function vpn_release_host();

    create table vpn_peer_changes (
      revision bigint generated always as identity primary key,
      server_id integer,
      user_id integer,
      public_key text,
      period date unique
    );
    create index vpn_peer_changes_server on vpn_peer_changes (server_id, revision);
    insert into vpn_peer_changes (server_id) values (null);

    create function vpn_log_change(sid integer, uid integer, key text) returns void language plpgsql as $$
    begin
      perform pg_advisory_xact_lock(4080091);
      insert into vpn_peer_changes (server_id, user_id, public_key) values (sid, uid, key);
    end $$;

    create function vpn_log_peer() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then perform vpn_log_change(old.server_id, null, old.public_key); end if;
      if tg_op in ('UPDATE', 'INSERT') then perform vpn_log_change(new.server_id, null, new.public_key); end if;
      return null;
    end $$;
    create constraint trigger wireguard_peers_log after insert or update of public_key, address or delete on wireguard_peers
      deferrable initially deferred for each row execute function vpn_log_peer();

    create function vpn_log_user() returns trigger language plpgsql as $$
    begin
      if tg_op in ('UPDATE', 'DELETE') then perform vpn_log_change(null, old.user_id, null); end if;
      if tg_op = 'INSERT' or (tg_op = 'UPDATE' and new.user_id <> old.user_id) then
        perform vpn_log_change(null, new.user_id, null);
      end if;
      return null;
    end $$;
    create constraint trigger vpn_access_holds_log after insert or delete on vpn_access_holds
      deferrable initially deferred for each row execute function vpn_log_user();
    create constraint trigger services_vpn_log after insert or update of status, expires_at, plan_id, user_id, created_at or delete on services
      deferrable initially deferred for each row execute function vpn_log_user();

    create function vpn_log_server() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' then perform vpn_log_change(old.server_id, null, null);
      else perform vpn_log_change(new.server_id, null, null); end if;
      return null;
    end $$;
    create constraint trigger server_plans_log after insert or delete on server_plans
      deferrable initially deferred for each row execute function vpn_log_server();

    create function vpn_log_everything() returns trigger language plpgsql as $$
    begin
      if new.bandwidth_limit_gb is distinct from old.bandwidth_limit_gb then perform vpn_log_change(null, null, null); end if;
      return null;
    end $$;
    create constraint trigger plans_vpn_log after update of bandwidth_limit_gb on plans
      deferrable initially deferred for each row execute function vpn_log_everything();

    create function vpn_log_usage() returns trigger language plpgsql as $$
    declare
      gb integer;
      uid integer;
      was numeric := 0;
      now_used numeric := new.rx_bytes::numeric + new.tx_bytes;
    begin
      select p.bandwidth_limit_gb, s.user_id into gb, uid
        from services s join plans p on p.id = s.plan_id where s.id = new.service_id;
      if gb is null or gb = 0 then return null; end if;
      if tg_op = 'UPDATE' then was := old.rx_bytes::numeric + old.tx_bytes; end if;
      if (was >= gb::numeric * 1073741824) <> (now_used >= gb::numeric * 1073741824) then
        perform vpn_log_change(null, uid, null);
      end if;
      return null;
    end $$;
    create constraint trigger usage_records_vpn_log after insert or update on usage_records
      deferrable initially deferred for each row execute function vpn_log_usage();
  `)
})
