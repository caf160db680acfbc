import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/**
 * Issue 34, [D107]: a handshake is never later than the server's clock (a node's handshake in the
 * future kept its device online). New reports are bounded when written; a value stored ahead
 * before that is brought back to now once.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`update wireguard_peers set last_handshake_at = now() where last_handshake_at > now()`)
})
