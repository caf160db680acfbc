import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D120]: every user has a language (`en`, `ru`, `fa`, `zh`) for mails, pages and the invoice
 * PDF; the accounts there before it read English.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    alter table users add column locale text not null default 'en'
      constraint users_locale_known check (locale in ('en', 'ru', 'fa', 'zh'));
  `)
})
