import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as RpcMiddleware from "@effect/rpc/RpcMiddleware"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { integer, string } from "../platform/Fields.ts"
import { OpenVpnEntry, RemovedOpenVpnEntry } from "./OpenVpnEntries.ts"
import { NodePeer } from "./Peers.ts"
import type { ServerId } from "../platform/Ids.ts"

/**
 * [D105]: the node protocol on `@effect/rpc`, one `RpcGroup` that the API serves at
 * `/v1/node/rpc` (NDJSON over HTTP, behind the node token) and that the node agent's client is
 * built from. A batch's entries are shaped as `GET /v1/node/peers` shapes them ([D92]): the same
 * entry schema, filled by the same function (`Access.nodeSync`).
 */

/** the path the API serves the group at (POST: the HTTP protocol) */
export const NODE_RPC_PATH = "/v1/node/rpc"

/** [D92]: a peer that left the server since the cursor */
export const RemovedEntry = Schema.Struct({ public_key: Schema.String, removed: Schema.Literal(true) })

/**
 * What changed after a revision, or (`full`) the whole list: the first batch of a stream when
 * `since` is null, unknown or too old ([D92]'s 422 `errors.since`, here answered with the list).
 */
export const PeersBatch = Schema.Struct({
  revision: Schema.Number,
  full: Schema.Boolean,
  /** WireGuard peers, or an OpenVPN server's credentials ([D106]) */
  peers: Schema.Array(Schema.Union(NodePeer, RemovedEntry, OpenVpnEntry, RemovedOpenVpnEntry)),
  /** issue 34: OpenVPN usernames whose password was replaced in this batch: their sessions end */
  rotated: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] })
})
export type PeersBatch = typeof PeersBatch.Type

/** A missing, malformed or unknown node token: the call never reaches its handler. */
export class NodeUnauthorized extends Schema.TaggedError<NodeUnauthorized>()("NodeUnauthorized", {
  message: Schema.String
}) {}

/** The server whose node token opened the call ([D54]). */
export class RpcNode extends Context.Tag("vpn/RpcNode")<RpcNode, { readonly serverId: ServerId }>() {}

/** Bearer node tokens, checked once per call (once per stream), before the handler. */
export class NodeRpcAuth extends RpcMiddleware.Tag<NodeRpcAuth>()("NodeRpcAuth", {
  provides: RpcNode,
  failure: NodeUnauthorized
}) {}

/**
 * Issue 34: a revision as the agent sends it: an integer from 0 to 2^53 - 1 (the change log's
 * `bigint` never passes it); a fraction, a negative or a larger number is refused by the payload's
 * schema (a 422 at the route, never a database error).
 */
const Revision = (field: string) => integer(field, { min: 0, max: Number.MAX_SAFE_INTEGER })

/** what an agent says it runs: `vpn-api <version>` or any short label, no control characters (issue 34) */
const Version = string("version", { max: 64 }).pipe(
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the C0 controls and DEL are what is refused
  Schema.filter((s) => !/[\x00-\x1f\x7f]/.test(s), { message: () => "The version field must not contain control characters." })
)

export class NodeRpcs extends RpcGroup.make(
  /**
   * Every change after `since` (null: the whole list first), then each new revision as it
   * commits on any instance, until the caller leaves. The first batch comes at once, even when
   * nothing changed (then with no peers): the caller learns the current revision.
   */
  Rpc.make("WatchPeers", {
    payload: { since: Schema.NullOr(Revision("since")) },
    success: PeersBatch,
    stream: true
  }),
  /** The agent applied `revision` (also its heartbeat): the admin routes and metrics show it. */
  Rpc.make("ReportApplied", {
    payload: { revision: Revision("revision"), version: Version },
    success: Schema.Struct({ lag: Schema.Number })
  })
).middleware(NodeRpcAuth) {}
