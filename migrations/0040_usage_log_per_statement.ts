import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 27, [D92] / [D94]: a node's usage or counters report writes up to 5 000 `usage_records`
 * rows in one statement, and the deferred row trigger `usage_records_vpn_log` of migration 8 ran
 * `vpn_log_usage` once per row at commit (a service and plan lookup each). It becomes two
 * statement-level triggers with transition tables: one set-based pass per statement finds the
 * services whose usage crossed their plan's limit (either way) and notes each user once in
 * `vpn_usage_crossings`; a deferred row trigger on that table (rows only for crossings, rare) logs
 * them with `vpn_log_change` at commit, as before (the advisory lock is still taken at commit, so
 * revisions become visible in order and no report holds it longer). What a report counts ([D94]'s
 * exactly-once) is untouched: only the peers-change log is written here.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    drop trigger if exists usage_records_vpn_log on usage_records;
    drop function if exists vpn_log_usage();

    -- what a statement found; emptied at commit by the deferred trigger below
    create table vpn_usage_crossings (user_id integer not null);
    create function vpn_log_usage_crossing() returns trigger language plpgsql as $$
    begin
      perform vpn_log_change(null, new.user_id, null);
      delete from vpn_usage_crossings where user_id = new.user_id;
      return null;
    end $$;
    create constraint trigger vpn_usage_crossings_log after insert on vpn_usage_crossings
      deferrable initially deferred for each row execute function vpn_log_usage_crossing();

    create function vpn_log_usage_rows() returns trigger language plpgsql as $$
    declare
      uid integer;
    begin
      if tg_op = 'INSERT' then
        for uid in
          select distinct s.user_id
          from vpn_usage_new n
          join services s on s.id = n.service_id
          join plans p on p.id = s.plan_id
          where p.bandwidth_limit_gb is not null and p.bandwidth_limit_gb > 0
            and n.rx_bytes::numeric + n.tx_bytes >= p.bandwidth_limit_gb::numeric * 1073741824
          order by 1
        loop
          insert into vpn_usage_crossings (user_id) values (uid);
        end loop;
      else
        for uid in
          select distinct s.user_id
          from vpn_usage_new n
          join vpn_usage_old o on o.service_id = n.service_id and o.period = n.period
          join services s on s.id = n.service_id
          join plans p on p.id = s.plan_id
          where p.bandwidth_limit_gb is not null and p.bandwidth_limit_gb > 0
            and (o.rx_bytes::numeric + o.tx_bytes >= p.bandwidth_limit_gb::numeric * 1073741824)
                <> (n.rx_bytes::numeric + n.tx_bytes >= p.bandwidth_limit_gb::numeric * 1073741824)
          order by 1
        loop
          insert into vpn_usage_crossings (user_id) values (uid);
        end loop;
      end if;
      return null;
    end $$;

    create trigger usage_records_vpn_log_insert after insert on usage_records
      referencing new table as vpn_usage_new
      for each statement execute function vpn_log_usage_rows();
    create trigger usage_records_vpn_log_update after update on usage_records
      referencing old table as vpn_usage_old new table as vpn_usage_new
      for each statement execute function vpn_log_usage_rows();
  `)
})
