import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** [D91]: users whose VPN access is on hold (disabled accounts); the VPN room's own table. */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create table vpn_access_holds (
      user_id integer primary key references users (id) on delete cascade,
      created_at timestamptz not null default now()
    );
  `)
})
