import * as Schema from "effect/Schema"
import type { UserId } from "./Ids.ts"

/* Who calls: the contract's middleware (http/Middleware) provides it, the accounts room issues it. */

/** The scopes an API key may carry ([D98]); an access token has them all. */
export const KeyScope = Schema.Literal("read", "write", "admin:read", "admin:write")
export type KeyScope = typeof KeyScope.Type

/** Who a live bearer token belongs to: a session's access token or an API key ([D98]). */
export interface Principal {
  /** how the caller authenticated: an access token (a session, [D99]) or an API key */
  readonly kind: "token" | "api_key"
  /** the access token's id, or the API key's id (`kind` says which) */
  readonly tokenId: number
  readonly userId: UserId
  readonly role: "user" | "admin"
  /** two-factor sign-in is on for the user ([D97]) */
  readonly twoFactor: boolean
  /**
   * the login behind this credential passed the second factor ([D115]): a session's own login,
   * or for an API key the session that created it
   */
  readonly secondFactor: boolean
  /** an API key's scopes (unused for an access token, which may do all its owner may) */
  readonly scopes: ReadonlyArray<KeyScope>
}
