import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { bearerSecret } from "../http/Auth.ts"
import { Unauthenticated } from "../http/Errors.ts"
import { constantTimeEqual, sha256Hex } from "../platform/Crypto.ts"
import { CurrentNode, NodeAuthentication } from "./NodeApi.ts"
import { Servers } from "./Servers.ts"

// the tags live with the contract (`NodeApi.ts`, issue 34)
export { CurrentNode, NodeAuthentication }

export const NodeAuthenticationLive = Layer.effect(
  NodeAuthentication,
  Effect.gen(function* () {
    const servers = yield* Servers
    return NodeAuthentication.of({
      nodeToken: () =>
        Effect.gen(function* () {
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
