import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 27, [D34]: a user's current service is the newest of their active or suspended services
 * that has not expired, read by walking `services_user` (user, newest first) to the first that
 * fits. The node list reads it for every owner of a page of peers, the usage and counters reports
 * for every owner they name: thousands of walks a request, each visiting the table's row to check
 * the status and the expiry. The same key with those columns (and what the lean reads return)
 * kept in the index lets PostgreSQL answer from the index alone (an index-only scan, for the pages
 * the visibility map marks all-visible). It replaces `services_user`: the same key serves every
 * read that index served.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create index services_user_current on services (user_id, created_at desc, id desc) include (status, expires_at, plan_id, starts_at);
    drop index services_user;
  `)
})
