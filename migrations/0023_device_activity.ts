import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D107]: devices you can see.
 * - `wireguard_peers.last_handshake_at`: the newest `latest_handshake` a node reported for the peer.
 * - `vpn_device_usage`: the bytes each device used on each server, per UTC day, written by a
 *   trigger on `peer_counters` from what each counters report added there ([D94]): the same
 *   increases as the services' usage, in the same transaction, so a device's bytes are counted
 *   exactly once. A period's bytes ([D95]: periods start on a day) are the sum of its days.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table wireguard_peers add column last_handshake_at timestamptz;

    create table vpn_device_usage (
      device_id integer not null references vpn_devices (id) on delete cascade,
      server_id integer not null references servers (id) on delete cascade,
      day date not null,
      rx_bytes bigint not null default 0 check (rx_bytes >= 0),
      tx_bytes bigint not null default 0 check (tx_bytes >= 0),
      primary key (device_id, server_id, day)
    );

    create function vpn_count_device_usage() returns trigger language plpgsql as $$
    declare
      dev integer;
    begin
      if new.rx_added = 0 and new.tx_added = 0 then return null; end if;
      if new.kind = 'public_key' then
        select device_id into dev from wireguard_peers where server_id = new.server_id and public_key = new.peer_key;
      else
        select device_id into dev from vpn_credentials where username = new.peer_key;
      end if;
      if dev is null then return null; end if;
      insert into vpn_device_usage (device_id, server_id, day, rx_bytes, tx_bytes)
        values (dev, new.server_id, (new.updated_at at time zone 'UTC')::date, new.rx_added, new.tx_added)
        on conflict (device_id, server_id, day) do update set
          rx_bytes = vpn_device_usage.rx_bytes + excluded.rx_bytes,
          tx_bytes = vpn_device_usage.tx_bytes + excluded.tx_bytes;
      return null;
    end $$;
    create trigger peer_counters_device_usage after insert or update on peer_counters
      for each row execute function vpn_count_device_usage();
  `)
})
