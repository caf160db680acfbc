import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D97]: two-factor sign-in, on the accounts room's `users` table. The secrets are sealed with the
 * application key; a secret is on once confirmed (`two_factor_secret`), the one being set up waits
 * in `two_factor_pending`. `two_factor_last_step` is the TOTP time step of the last accepted
 * sign-in code (a code is never accepted twice); the recovery codes are SHA-256 hashes, each
 * removed when used.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table users
      add column two_factor_secret text,
      add column two_factor_pending text,
      add column two_factor_last_step bigint,
      add column two_factor_recovery text[] not null default '{}';
  `)
})
