import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { OpenVpnEntry, RemovedOpenVpnEntry } from "./Domain.ts"

// the schemas the contract shows live in `Domain.ts` (issue 34)
export { OpenVpnEntry, RemovedOpenVpnEntry }

/** the change-log key of a username ([D106], migration 22) */
export const OVPN_KEY_PREFIX = "ovpn:"
/** issue 34: the change-log key of a username whose secret was replaced (migration 50) */
export const OVPN_ROTATED_KEY_PREFIX = "ovpn-rotated:"
/** a change-log key that names a credential, not a WireGuard key (base64: never a colon) */
export const isCredentialKey = (key: string): boolean => key.includes(":")

const CredentialRow = Schema.Struct({ user_id: Schema.Int, username: Schema.String, held: Schema.Boolean })
export type CredentialRow = typeof CredentialRow.Type

/** The credentials an OpenVPN node is told about, read from the VPN room's `vpn_credentials`. */
export class OpenVpnEntries extends Effect.Service<OpenVpnEntries>()("vpn/OpenVpnEntries", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`c.user_id, c.username, exists(select 1 from vpn_access_holds h where h.user_id = c.user_id) as held`
    const rows = SqlSchema.findAll({
      Request: Schema.Struct({ users: Schema.String, names: Schema.String }),
      Result: CredentialRow,
      execute: ({ names, users }) => sql`
        select ${columns} from vpn_credentials c
        where c.user_id in (select (jsonb_array_elements_text(${users}::jsonb))::int)
           or c.username in (select jsonb_array_elements_text(${names}::jsonb))
        order by c.user_id, c.device_id`
    })
    return {
      /** the credentials of these users or with these usernames (one query) */
      of: (userIds: ReadonlyArray<number>, usernames: ReadonlyArray<string>) =>
        userIds.length === 0 && usernames.length === 0
          ? Effect.succeed([] as ReadonlyArray<CredentialRow>)
          : rows({ users: JSON.stringify(userIds), names: JSON.stringify(usernames) }).pipe(Effect.orDie)
    } as const
  })
}) {}
