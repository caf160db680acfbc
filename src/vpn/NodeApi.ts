import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpApiSecurity from "@effect/platform/HttpApiSecurity"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import { describe } from "../http/Describe.ts"
import { Ok } from "../http/Envelope.ts"
import { ForbiddenResponse, UnauthenticatedResponse, ValidationErrorResponse } from "../http/Errors.ts"
import { Body, string } from "../platform/Fields.ts"
import { MAX_BYTES } from "./Bandwidth.ts"
import { Accepted, NodePeer, OpenVpnEntry, RemovedOpenVpnEntry } from "./Domain.ts"
import type { ServerId } from "../platform/Ids.ts"

// The node routes of [D54], [D92], [D94], [D106] (moved out of vpn/Api.ts whole).

/** The VPN server whose node token authenticated the request ([D54]). */
export class CurrentNode extends Context.Tag("CurrentNode")<CurrentNode, { readonly serverId: ServerId }>() {}

/**
 * Node tokens of [D54]: `Authorization: Bearer <node token>`, looked up by its SHA-256 in
 * `servers.node_token_hash` (`NodeAuth.ts`). A user's token is no node token (401), and a node
 * token is no user token (the user routes' `Authentication` refuses it).
 */
export class NodeAuthentication extends HttpApiMiddleware.Tag<NodeAuthentication>()("NodeAuthentication", {
  failure: UnauthenticatedResponse,
  provides: CurrentNode,
  security: { nodeToken: HttpApiSecurity.bearer }
}) {}

export const NodePeerResponse = NodePeer.annotations({ identifier: "NodePeer" })

/** [D92]: a peer that left the server since the cursor. */
export const RemovedPeer = Schema.Struct({ public_key: Schema.String, removed: Schema.Literal(true) }).annotations({ identifier: "RemovedNodePeer" })

/** [D92]: `{success: true, data: [...], meta: {revision}}`; the handler returns `{data, meta}`. */
export const NodeSyncBody = Schema.Struct({
  data: Schema.Array(
    Schema.Union(
      NodePeerResponse,
      RemovedPeer,
      // [D106]: an OpenVPN server's credentials
      OpenVpnEntry.annotations({ identifier: "NodeOpenVpnEntry" }),
      RemovedOpenVpnEntry.annotations({ identifier: "RemovedNodeOpenVpnEntry" })
    )
  ),
  meta: Schema.Struct({
    revision: Schema.Number.annotations({ description: "An opaque cursor that only grows: send it back as `since`." }),
    rotated: Schema.optional(Schema.Array(Schema.String)).annotations({
      description:
        "OpenVPN servers, `?since=` answers only (issue 34): the usernames whose password was replaced after the cursor; their open sessions must end. Absent when none."
    })
  })
})
export const NodeSyncResponse = Schema.transform(Schema.Struct({ success: Schema.Literal(true), ...NodeSyncBody.fields }), Schema.typeSchema(NodeSyncBody), {
  strict: true,
  decode: ({ data, meta }) => ({ data, meta }),
  encode: ({ data, meta }) => ({ success: true as const, data, meta })
}).annotations({ identifier: "NodePeerList" })

const nodeReport = (fields: readonly [string, string], description: string) =>
  Schema.Array(
    Schema.Unknown.annotations({
      jsonSchema: {
        type: "object",
        properties: {
          public_key: { type: "string" },
          username: { type: "string" },
          [fields[0]]: { type: "integer", minimum: 0, maximum: MAX_BYTES },
          [fields[1]]: { type: "integer", minimum: 0, maximum: MAX_BYTES }
        },
        required: [...fields]
      }
    })
  ).annotations({ message: () => "The body must be a JSON array.", description })

/** The node's counter deltas: an array of entries, each checked by `Usage.record` (`0.rx_bytes`). */
export const UsageReport = nodeReport(["rx_bytes", "tx_bytes"], "Counter deltas per peer ([D54]).")

/** [D94]: the node's cumulative counters (what `wg show <if> dump` prints), checked by `Usage.recordCounters`. */
export const CountersReport = nodeReport(
  ["rx_total", "tx_total"],
  "Cumulative counters per peer ([D94]): the increase since the last report counts; a total below the last one is a counter reset."
)

/** [D94]: a retry under the same key (same node, within 24 h) answers the first answer and adds nothing. */
const IdempotencyKey = Schema.Struct({
  "idempotency-key": Schema.optional(
    Schema.String.annotations({
      description: "1-255 visible ASCII characters naming this report; retry a report with its key until it is answered.",
      jsonSchema: {
        type: "string",
        pattern: "^[\\x21-\\x7e]{1,255}$",
        description: "1-255 visible ASCII characters naming this report; retry a report with its key until it is answered."
      }
    })
  )
})

/** The node API of [D54], behind node tokens. */
export class NodeApi extends HttpApiGroup.make("node")
  .annotate(OpenApi.Description, "The routes the VPN servers' node agents call (node token).")
  .add(
    HttpApiEndpoint.get("peers", "/node/peers")
      .annotateContext(
        describe(
          "List this server's peers (node agent)",
          "The peers and credentials the calling server must serve, with `meta.revision`; with `?since=<revision>` only what changed after it. Node token only."
        )
      )
      .setUrlParams(
        Schema.Struct({
          since: Schema.optional(Schema.String.annotations({ description: "A `meta.revision` of an earlier answer: only what changed after it." }))
        })
      )
      .addSuccess(NodeSyncResponse)
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("openvpnAuth", "/node/openvpn/auth")
      .annotateContext(
        describe(
          "Check an OpenVPN login (node agent)",
          "200 when the username and password may connect through this OpenVPN server, 403 otherwise. Node token of an OpenVPN server only."
        )
      )
      .setPayload(Body({ username: string("username"), password: string("password", { max: 255 }) }))
      .addSuccess(
        Ok(
          Schema.Struct({
            username: Schema.String,
            allowed: Schema.Literal(true),
            /** [D103]: the speed to shape the session to (Mbps, both ways); null: none */
            speed_limit_mbps: Schema.NullOr(Schema.Int)
          }),
          { identifier: "NodeOpenVpnAuthResponse" }
        )
      )
      .addError(ForbiddenResponse)
  )
  .add(
    HttpApiEndpoint.post("usage", "/node/usage")
      .annotateContext(
        describe(
          "Report usage deltas (node agent)",
          "Adds byte deltas of this server's peers to their services' usage; `data.accepted` counts the entries counted. Send an `Idempotency-Key` so a retried report counts once."
        )
      )
      .setHeaders(IdempotencyKey)
      .setPayload(UsageReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeUsageResponse" }))
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("counters", "/node/counters")
      .annotateContext(
        describe(
          "Report interface counters (node agent)",
          "Reports WireGuard's cumulative counters; the server derives the deltas exactly once. Send an `Idempotency-Key` so a retried report counts once."
        )
      )
      .setHeaders(IdempotencyKey)
      .setPayload(CountersReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeCountersResponse" }))
      .addError(ValidationErrorResponse)
  )
  .middlewareEndpoints(NodeAuthentication) {}
