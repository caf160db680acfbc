import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * Issue 18: indexes for the request paths at a million users.
 * - The admin search `GET /v1/admin/users?email=` matches `lower(email) like '%needle%'`: a
 *   trigram GIN index serves it where the server offers `pg_trgm` (PostgreSQL's contrib, a trusted
 *   extension since PostgreSQL 13). The embedded PGlite ships without it unless loaded at start:
 *   there the migration skips the index and the same query scans the (small) table.
 * - Deleting a user detaches its invoices (`service_id`, `on delete set null` from the services
 *   that cascade) and its ticket replies (`author_id`): without an index each one scans the table.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const available = yield* SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ name: Schema.String }),
    execute: () => sql`select name::text as name from pg_available_extensions where name = 'pg_trgm'`
  })(undefined)
  if (available.length > 0) {
    yield* sql.unsafe(`
      create extension if not exists pg_trgm;
      create index users_email_trgm on users using gin (lower(email) gin_trgm_ops);
    `)
  }
  yield* sql.unsafe(`
    create index invoices_service on invoices (service_id) where service_id is not null;
    create index ticket_replies_author on ticket_replies (author_id) where author_id is not null;
  `)
})
