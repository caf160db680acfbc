import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 27, [D107] / [D94]: a counters report writes up to 5 000 `peer_counters` rows in one
 * statement, and the row trigger `peer_counters_device_usage` of migration 23 ran
 * `vpn_count_device_usage` once per row (a peer or credential lookup and an upsert of the
 * device's day each: most of the report's time). It becomes two statement-level triggers with
 * transition tables (an `insert ... on conflict do update` fires both: the rows it inserted, the
 * rows it updated): one set-based upsert per statement of what each device's rows added that
 * day, in key order. The bytes counted are the same: the rows' `rx_added` / `tx_added` (rows that
 * added nothing skipped), each row's device found as before (its WireGuard peer on the row's
 * server, or its OpenVPN credential by username), summed per device, server and UTC day.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    drop trigger if exists peer_counters_device_usage on peer_counters;
    drop function if exists vpn_count_device_usage();

    create function vpn_count_device_usage_rows() returns trigger language plpgsql as $$
    begin
      insert into vpn_device_usage (device_id, server_id, day, rx_bytes, tx_bytes)
      select d.dev, n.server_id, (n.updated_at at time zone 'UTC')::date, sum(n.rx_added), sum(n.tx_added)
      from vpn_counters_new n
      -- one index probe per row, as the row trigger did (a join over a report's rows may be
      -- planned as a scan of the peers)
      cross join lateral (
        select case when n.kind = 'public_key'
          then (select device_id from wireguard_peers where server_id = n.server_id and public_key = n.peer_key)
          else (select device_id from vpn_credentials where username = n.peer_key)
        end as dev
      ) d
      where (n.rx_added > 0 or n.tx_added > 0) and d.dev is not null
      group by 1, 2, 3
      order by 1, 2, 3
      on conflict (device_id, server_id, day) do update set
        rx_bytes = vpn_device_usage.rx_bytes + excluded.rx_bytes,
        tx_bytes = vpn_device_usage.tx_bytes + excluded.tx_bytes;
      return null;
    end $$;

    create trigger peer_counters_device_usage_insert after insert on peer_counters
      referencing new table as vpn_counters_new
      for each statement execute function vpn_count_device_usage_rows();
    create trigger peer_counters_device_usage_update after update on peer_counters
      referencing new table as vpn_counters_new
      for each statement execute function vpn_count_device_usage_rows();
  `)
})
