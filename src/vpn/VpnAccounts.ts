import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { VpnAccessControl } from "../accounts/VpnAccessControl.ts"
import { Credentials } from "./Credentials.ts"
import { Peers } from "./Peers.ts"
import { SubscriptionLinks } from "./SubscriptionLinks.ts"
import type { UserId } from "../platform/Ids.ts"

/**
 * VPN access following the account ([D21], [D23], [D91]): a disabled user's access is on hold
 * (their peers listed `enabled: false`, their OpenVPN credentials refused) until re-enabled, and
 * a password reset renews every key and secret they hold. Both run on the caller's `SqlClient`,
 * inside the caller's transaction when there is one.
 */
export class VpnAccounts extends Effect.Service<VpnAccounts>()("vpn/VpnAccounts", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const peers = yield* Peers
    const credentials = yield* Credentials
    const links = yield* SubscriptionLinks

    const hold = SqlSchema.void({
      Request: Schema.Int,
      execute: (userId) => sql`insert into vpn_access_holds (user_id) values (${userId}) on conflict do nothing`
    })
    const release = SqlSchema.void({
      Request: Schema.Int,
      execute: (userId) => sql`delete from vpn_access_holds where user_id = ${userId}`
    })

    return {
      /** [D91]: a disabled user's VPN access stops at once; re-enabling restores it */
      setUserEnabled: (userId: UserId, enabled: boolean): Effect.Effect<void> => (enabled ? release(userId) : hold(userId)).pipe(Effect.orDie),
      /**
       * [D91]: every device rotated: every WireGuard key pair replaced (addresses kept), every
       * OpenVPN secret renewed, every subscription link ended ([D122])
       */
      revokeAll: (userId: UserId): Effect.Effect<void> =>
        sql.withTransaction(Effect.all([peers.rekeyAll(userId), credentials.renewAllOf(userId), links.endAll(userId)])).pipe(Effect.asVoid, Effect.orDie)
    } as const
  }),
  dependencies: [Peers.Default, Credentials.Default, SubscriptionLinks.Default]
}) {}

/** The accounts room's `VpnAccessControl` port, provided by this room. */
export const VpnAccessControlLive = Layer.effect(
  VpnAccessControl,
  Effect.map(VpnAccounts, (accounts) => VpnAccessControl.of(accounts))
).pipe(Layer.provide(VpnAccounts.Default))
