import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D33] (rev. 2): promos limit the uses of one caller (default 1; null: no limit).
 * [D35] (rev. 2): the e-mail addresses (hashed) that had their free trial, kept after the account.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table promo_codes add column max_uses_per_user integer default 1
      check (max_uses_per_user is null or max_uses_per_user >= 1);

    create table trial_claims (
      email_hash text primary key,
      claimed_at timestamptz not null default now()
    );
  `)
})
