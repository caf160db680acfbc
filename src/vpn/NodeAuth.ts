import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { bearerSecret } from "../http/Auth.ts"
import { Unauthenticated, UnauthenticatedResponse } from "../http/Errors.ts"
import { constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { Servers } from "./Servers.ts"

/** The VPN server whose node token authenticated the request ([D54]). */
export class CurrentNode extends Context.Tag("CurrentNode")<CurrentNode, { readonly serverId: number }>() {}

/**
 * Node tokens of [D54]: `Authorization: Bearer <node token>`, looked up by its SHA-256 in
 * `servers.node_token_hash`. A user's token is no node token (401), and a node token is no
 * user token (the user routes' `Authentication` refuses it).
 */
export class NodeAuthentication extends HttpApiMiddleware.Tag<NodeAuthentication>()("NodeAuthentication", {
  failure: UnauthenticatedResponse,
  provides: CurrentNode,
  security: { nodeToken: HttpApiSecurity.bearer }
}) {}

export const NodeAuthenticationLive = Layer.effect(
  NodeAuthentication,
  Effect.gen(function*() {
    const servers = yield* Servers
    return NodeAuthentication.of({
      nodeToken: () =>
        Effect.gen(function*() {
          const secret = yield* bearerSecret
          if (Option.isNone(secret) || secret.value.length > 512) return yield* Effect.fail(new Unauthenticated())
          const hash = sha256Hex(secret.value)
          const node = yield* servers.byNodeTokenHash(hash)
          if (Option.isNone(node) || !constantTimeEqual(node.value.node_token_hash, hash)) {
            return yield* Effect.fail(new Unauthenticated())
          }
          return { serverId: node.value.id }
        })
    })
  })
)
