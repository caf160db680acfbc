import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 27, [D94] / [D107]: every counters report updates each reported peer's `peer_counters`
 * row and its device's `vpn_device_usage` row of the day. Pages filled half leave room for the
 * new version of each row on its own page (a HOT update: no new index entry, less WAL); the
 * versions a report leaves behind are pruned on the next visit. Measured on the scale
 * benchmark's database (25 000 peers, 5 000-entry reports): PostgreSQL's CPU per counters report
 * 193–215 ms at fillfactor 100, 153–157 ms at 50. Only pages written from now on follow it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table peer_counters set (fillfactor = 50);
    alter table vpn_device_usage set (fillfactor = 50);
  `)
})
