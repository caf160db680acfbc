import * as Rpc from "@effect/rpc/Rpc"
import * as RpcGroup from "@effect/rpc/RpcGroup"
import * as RpcMiddleware from "@effect/rpc/RpcMiddleware"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { OpenVpnEntry, RemovedOpenVpnEntry } from "./OpenVpnEntries.ts"
import { NodePeer } from "./Peers.ts"

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
  peers: Schema.Array(Schema.Union(NodePeer, RemovedEntry, OpenVpnEntry, RemovedOpenVpnEntry))
})
export type PeersBatch = typeof PeersBatch.Type

/** A missing, malformed or unknown node token: the call never reaches its handler. */
export class NodeUnauthorized extends Schema.TaggedError<NodeUnauthorized>()("NodeUnauthorized", {
  message: Schema.String
}) {}

/** The server whose node token opened the call ([D54]). */
export class RpcNode extends Context.Tag("vpn/RpcNode")<RpcNode, { readonly serverId: number }>() {}

/** Bearer node tokens, checked once per call (once per stream), before the handler. */
export class NodeRpcAuth extends RpcMiddleware.Tag<NodeRpcAuth>()("NodeRpcAuth", {
  provides: RpcNode,
  failure: NodeUnauthorized
}) {}

/** what an agent says it runs: `vpn-api <version>` or any short label */
const Version = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(64))

export class NodeRpcs extends RpcGroup.make(
  /**
   * Every change after `since` (null: the whole list first), then each new revision as it
   * commits on any instance, until the caller leaves. The first batch comes at once, even when
   * nothing changed (then with no peers): the caller learns the current revision.
   */
  Rpc.make("WatchPeers", {
    payload: { since: Schema.NullOr(Schema.Number) },
    success: PeersBatch,
    stream: true
  }),
  /** The agent applied `revision` (also its heartbeat): the admin routes and metrics show it. */
  Rpc.make("ReportApplied", {
    payload: { revision: Schema.Number, version: Version },
    success: Schema.Struct({ lag: Schema.Number })
  })
).middleware(NodeRpcAuth) {}
