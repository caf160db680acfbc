import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * [D112]: a renewal invoice ([D80]) goes through the gateway its service was last paid by; the
 * jobs' batch finds that invoice per service through this index.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`create index invoices_paid_by_service on invoices (service_id, paid_at desc) where status = 'paid'`)
})
