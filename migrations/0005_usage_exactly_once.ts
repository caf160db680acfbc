import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D94]: usage counted exactly once; the VPN room's own tables.
 * - `usage_reports`: the answer a node's report got under its `Idempotency-Key` (per server and
 *   route), written in the transaction that counted the report; `response` is null only inside
 *   that transaction. Keys older than 24 h are ignored and purged by the jobs.
 * - `peer_counters`: the last cumulative totals a node reported per peer (`kind` `public_key`
 *   for a WireGuard peer, `username` for an OpenVPN user) and what that report added.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table usage_reports (
      server_id integer not null references servers (id) on delete cascade,
      route text not null check (route in ('usage', 'counters')),
      idempotency_key text not null check (char_length(idempotency_key) between 1 and 255),
      response jsonb,
      created_at timestamptz not null,
      primary key (server_id, route, idempotency_key)
    );
    create index usage_reports_created_at on usage_reports (created_at);

    create table peer_counters (
      server_id integer not null references servers (id) on delete cascade,
      kind text not null check (kind in ('public_key', 'username')),
      peer_key text not null,
      rx_total bigint not null check (rx_total >= 0),
      tx_total bigint not null check (tx_total >= 0),
      rx_added bigint not null check (rx_added >= 0),
      tx_added bigint not null check (tx_added >= 0),
      updated_at timestamptz not null,
      primary key (server_id, kind, peer_key)
    );
  `)
})
