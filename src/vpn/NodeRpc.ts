import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as RpcMessage from "@effect/rpc/RpcMessage"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as RpcServer from "@effect/rpc/RpcServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { Access } from "./Access.ts"
import { NodeAgents } from "./NodeAgents.ts"
import { NODE_RPC_PATH, NodeRpcAuth, NodeRpcs, NodeUnauthorized, type PeersBatch, RpcNode } from "./NodeProtocol.ts"
import { guardNodeRpc } from "./NodeRpcHttp.ts"
import { PeerWake } from "./PeerWake.ts"
import { Servers } from "./Servers.ts"
import type { ServerId } from "../platform/Ids.ts"

/**
 * [D105]: the server side of the node protocol, on the API's own router and port. `WatchPeers`
 * answers what changed after `since` with `Access.nodeSync` (the code of `GET /v1/node/peers`),
 * then one batch per new revision of the change log, woken by `PeerWake` (LISTEN/NOTIFY).
 */

/** Bun closes an HTTP response quiet for 10 s: each open stream gets a protocol `Pong` this often. */
const KEEPALIVE = "5 seconds"

/** [D54]: the server whose node token an `Authorization: Bearer` header carries */
const nodeOfHeader =
  (servers: Servers) =>
  (authorization: string | undefined): Effect.Effect<Option.Option<ServerId>> =>
    Effect.gen(function* () {
      const secret = /^bearer +(\S.*)$/i.exec(authorization ?? "")?.[1]?.trim()
      if (secret === undefined || secret.length > 512) return Option.none()
      const hash = sha256Hex(secret)
      const node = yield* servers.byNodeTokenHash(hash)
      return Option.isSome(node) && constantTimeEqual(node.value.node_token_hash, hash) ? Option.some(node.value.id) : Option.none()
    })

/** each call checked again (the guard checked the request's header already; a call carries no other) */
const AuthLive = Layer.effect(
  NodeRpcAuth,
  Effect.gen(function* () {
    const nodeOf = nodeOfHeader(yield* Servers)
    const refused = new NodeUnauthorized({ message: "A valid node token is required." })
    return NodeRpcAuth.of(({ headers }) =>
      Effect.flatMap(nodeOf(headers["authorization"]), (node) => (Option.isNone(node) ? Effect.fail(refused) : Effect.succeed({ serverId: node.value })))
    )
  })
)

const HandlersLive = NodeRpcs.toLayer(
  Effect.gen(function* () {
    const access = yield* Access
    const agents = yield* NodeAgents
    const wake = yield* PeerWake

    /** the changes after `since`, or the whole list when there is no usable cursor ([D92]) */
    const batchAfter = (serverId: ServerId, since: number | null): Effect.Effect<PeersBatch> =>
      (since === null
        ? Effect.fail("full" as const)
        : access.nodeSync(serverId, String(since)).pipe(
            Effect.map((s) => ({ ...s, full: false })),
            Effect.mapError(() => "full" as const)
          )
      ).pipe(
        Effect.catchAll(() => Effect.map(access.nodeSync(serverId, undefined).pipe(Effect.orDie), (s) => ({ ...s, full: true }))),
        Effect.map((s): PeersBatch => ({ revision: s.revision, full: s.full, peers: s.peers, rotated: "rotated" in s ? (s.rotated ?? []) : [] }))
      )

    return NodeRpcs.of({
      WatchPeers: ({ since }) =>
        Effect.gen(function* () {
          const { serverId } = yield* RpcNode
          // subscribed before the first read: a commit between the two is pushed, not lost
          const heads = yield* wake.subscribe
          yield* Effect.acquireRelease(agents.opened(serverId), () => agents.closed(serverId))
          const first = yield* batchAfter(serverId, since)
          let last = first.revision
          const next = Stream.fromQueue(heads).pipe(
            Stream.filter((head) => head > last),
            Stream.mapEffect(() => batchAfter(serverId, last)),
            Stream.filter((batch) => {
              if (batch.revision <= last && !batch.full) return false
              last = batch.revision
              return true
            })
          )
          return Stream.concat(Stream.make(first), next)
        }).pipe(Stream.unwrapScoped),
      ReportApplied: ({ revision, version }) =>
        Effect.flatMap(RpcNode, ({ serverId }) => Effect.map(agents.applied(serverId, revision, version), (lag) => ({ lag })))
    })
  })
)

/**
 * POST `/v1/node/rpc` on the API's router, behind the guard of issue 34 (`NodeRpcHttp.ts`: the
 * token, the size, the calls and the streams checked before the RPC server decodes anything),
 * with the keepalive of every open response.
 */
const ProtocolLive = Layer.scoped(
  RpcServer.Protocol,
  Effect.gen(function* () {
    const router = yield* HttpApiBuilder.Router
    const guard = guardNodeRpc(nodeOfHeader(yield* Servers))
    const { httpApp, protocol } = yield* RpcServer.makeProtocolWithHttpApp
    yield* router.post(NODE_RPC_PATH, guard(httpApp))
    yield* protocol.clientIds.pipe(
      Effect.flatMap((ids) => Effect.forEach(ids, (id) => protocol.send(id, RpcMessage.constPong), { discard: true })),
      Effect.schedule(Schedule.spaced(KEEPALIVE)),
      Effect.forkScoped
    )
    return protocol
  })
).pipe(Layer.provide(HttpApiBuilder.Router.Live))

/** The node protocol served beside the HttpApi (the same server and port). */
export const NodeRpcLive = RpcServer.layer(NodeRpcs, { disableTracing: true }).pipe(
  Layer.provide([ProtocolLive, HandlersLive, AuthLive]),
  Layer.provide(RpcSerialization.layerNdjson),
  Layer.provide(Layer.mergeAll(NodeAgents.Default, PeerWake.Default))
)
