import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"

/**
 * The SQL client of the reads that may lag ([D126]): on the replicas of `DATABASE_READ_URL`, or
 * the primary's own client when it is unset (and on the embedded database). Only the reads
 * DECISIONS names use it: usage history and summary, admin lists and search, the audit log,
 * reports. A token check, a write, and any read that follows a write of the same request stay on
 * `SqlClient` (the primary). Never open a transaction on it: a statement of `ReadSql` run inside
 * a primary transaction already runs on that transaction's connection (`@effect/sql` keys the
 * open transaction by one tag for every client), so it reads the transaction's own writes.
 */
export class ReadSql extends Context.Tag("platform/ReadSql")<ReadSql, SqlClient.SqlClient>() {
  /** the primary's client for the reads too (no `DATABASE_READ_URL`; tests) */
  static readonly Primary: Layer.Layer<ReadSql, never, SqlClient.SqlClient> = Layer.effect(ReadSql, SqlClient.SqlClient)
}
