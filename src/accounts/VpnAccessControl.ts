import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { UserId } from "../platform/Ids.ts"

/**
 * VPN access following the account ([D21], [D23], [D91]). A port: accounts declares it, the VPN
 * room (which owns the peers, credentials and holds) provides it (`vpn/VpnAccounts.ts`), as
 * `http/Auth`'s `BearerTokens`. Both run inside the caller's transaction when there is one.
 */
export class VpnAccessControl extends Context.Tag("accounts/VpnAccessControl")<
  VpnAccessControl,
  {
    /** [D91]: a disabled user's VPN access stops at once; re-enabling restores it */
    readonly setUserEnabled: (userId: UserId, enabled: boolean) => Effect.Effect<void>
    /** [D91]: every device rotated: every WireGuard key pair replaced, every OpenVPN secret renewed */
    readonly revokeAll: (userId: UserId) => Effect.Effect<void>
  }
>() {}
