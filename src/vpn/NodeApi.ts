import * as OpenApi from "@effect/platform/OpenApi"
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as Arr from "effect/Array"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { describe } from "../http/Describe.ts"
import { Ok } from "../http/Envelope.ts"
import { ForbiddenResponse, ValidationErrorResponse } from "../http/Errors.ts"
import { Body, string } from "../platform/Fields.ts"
import { MAX_BYTES } from "./Bandwidth.ts"
import { NodeAuthentication } from "./NodeAuth.ts"
import { OpenVpnEntry, RemovedOpenVpnEntry } from "./OpenVpnEntries.ts"
import { NodePeer as NodePeerFields } from "./Peers.ts"
import { checkReport, type CounterFields, DELTAS, type FieldErrors, handshakeErrors, TOTALS } from "./ReportCheck.ts"
import { Accepted, VALID_KEY } from "./UsageReports.ts"

// The node routes of [D54], [D92], [D94], [D106] (moved out of vpn/Api.ts whole).

export const NodePeer = NodePeerFields.annotations({ identifier: "NodePeer" })

/** [D92]: a peer that left the server since the cursor. */
export const RemovedPeer = Schema.Struct({ public_key: Schema.String, removed: Schema.Literal(true) })
  .annotations({ identifier: "RemovedNodePeer" })

/** [D92]: `{success: true, data: [...], meta: {revision}}`; the handler returns `{data, meta}`. */
export const NodeSyncBody = Schema.Struct({
  data: Schema.Array(Schema.Union(
    NodePeer,
    RemovedPeer,
    // [D106]: an OpenVPN server's credentials
    OpenVpnEntry.annotations({ identifier: "NodeOpenVpnEntry" }),
    RemovedOpenVpnEntry.annotations({ identifier: "RemovedNodeOpenVpnEntry" })
  )),
  meta: Schema.Struct({
    revision: Schema.Number.annotations({ description: "An opaque cursor that only grows: send it back as `since`." })
  })
})
export const NodeSyncResponse = Schema.transform(
  Schema.Struct({ success: Schema.Literal(true), ...NodeSyncBody.fields }),
  Schema.typeSchema(NodeSyncBody),
  {
    strict: true,
    decode: ({ data, meta }) => ({ data, meta }),
    encode: ({ data, meta }) => ({ success: true as const, data, meta })
  }
).annotations({ identifier: "NodePeerList" })

/** One entry of a report once checked: a peer's (`public_key`) or an OpenVPN user's (`username`) two counters. */
const ReportEntry = Schema.Struct({
  public_key: Schema.optional(Schema.String),
  username: Schema.optional(Schema.String),
  rx: Schema.Number,
  tx: Schema.Number
})

/** A checked report: its entries, and the entries as sent (what the handshakes of [D107] are read from). */
const CheckedReport = Schema.Struct({ entries: Schema.Array(ReportEntry), raw: Schema.Array(Schema.Unknown) })

/** The field errors of a report as the issue the error mapping reads (`0.rx_bytes`, `body`): one message each. */
const reportIssue = (actual: unknown, errors: FieldErrors): ParseResult.ParseIssue => {
  const issues = Object.entries(errors).flatMap(([key, messages]) =>
    messages.map((message): ParseResult.ParseIssue => {
      const leaf = new ParseResult.Type(AST.unknownKeyword, actual, message)
      const [head, ...rest] = key.split(".")
      return key === "body" ? leaf : new ParseResult.Pointer([head ?? key, ...rest], actual, leaf)
    })
  )
  return Arr.isNonEmptyReadonlyArray(issues)
    ? new ParseResult.Composite(AST.unknownKeyword, actual, issues)
    : new ParseResult.Type(AST.unknownKeyword, actual)
}

/**
 * A node's report checked at the boundary ([D54], [D94], [D107]), field by field
 * (`ReportCheck.checkReport`, keyed `<index>.<field>` as Laravel does for arrays); a counters
 * report's handshakes first.
 */
const nodeReport = (fields: CounterFields, description: string, counters: boolean) =>
  Schema.transformOrFail(
    wireReport(fields, description),
    CheckedReport,
    {
      strict: true,
      decode: (raw) => {
        const handshakes = counters ? handshakeErrors(raw) : {}
        if (Object.keys(handshakes).length > 0) return ParseResult.fail(reportIssue(raw, handshakes))
        const report = checkReport(raw, fields, counters)
        return Object.keys(report.errors).length > 0
          ? ParseResult.fail(reportIssue(raw, report.errors))
          : ParseResult.succeed({ entries: report.entries, raw })
      },
      encode: ({ raw }) => ParseResult.succeed(raw)
    }
  )

/** A report as it arrives: an array of entries (what the documents show). */
const wireReport = (fields: readonly [string, string], description: string) =>
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

/** The node's counter deltas: an array of entries, each checked here (`0.rx_bytes`). */
export const UsageReport = nodeReport(DELTAS, "Counter deltas per peer ([D54]).", false)

/** [D94]: the node's cumulative counters (what `wg show <if> dump` prints), each peer once per report. */
export const CountersReport = nodeReport(
  TOTALS,
  "Cumulative counters per peer ([D94]): the increase since the last report counts; a total below the last one is a counter reset.",
  true
)

/** [D94]: a retry under the same key (same node, within 24 h) answers the first answer and adds nothing. */
const IdempotencyKey = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.filter((key) => VALID_KEY.test(key))).annotations({
    // the error mapping names a header's field with underscores: `errors.idempotency_key`
    message: () => "The idempotency key must be between 1 and 255 visible ASCII characters.",
    description: "1-255 visible ASCII characters naming this report; retry a report with its key until it is answered.",
    jsonSchema: {
      type: "string",
      pattern: "^[\\x21-\\x7e]{1,255}$",
      description: "1-255 visible ASCII characters naming this report; retry a report with its key until it is answered."
    }
  }))
})

/** The node API of [D54], behind node tokens. */
export class NodeApi extends HttpApiGroup.make("node")
  .annotate(OpenApi.Description, "The routes the VPN servers' node agents call (node token).")
  .add(
    HttpApiEndpoint.get("peers", "/node/peers")
      .annotateContext(describe("List this server's peers (node agent)", "The peers and credentials the calling server must serve, with `meta.revision`; with `?since=<revision>` only what changed after it. Node token only."))
      .setUrlParams(Schema.Struct({
        since: Schema.optional(Schema.String.annotations({ description: "A `meta.revision` of an earlier answer: only what changed after it." }))
      }))
      .addSuccess(NodeSyncResponse)
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("openvpnAuth", "/node/openvpn/auth")
      .annotateContext(describe("Check an OpenVPN login (node agent)", "200 when the username and password may connect through this OpenVPN server, 403 otherwise. Node token of an OpenVPN server only."))
      .setPayload(Body({ username: string("username"), password: string("password", { max: 255 }) }))
      .addSuccess(Ok(Schema.Struct({
        username: Schema.String,
        allowed: Schema.Literal(true),
        /** [D103]: the speed to shape the session to (Mbps, both ways); null: none */
        speed_limit_mbps: Schema.NullOr(Schema.Int)
      }), { identifier: "NodeOpenVpnAuthResponse" }))
      .addError(ForbiddenResponse)
  )
  .add(
    HttpApiEndpoint.post("usage", "/node/usage")
      .annotateContext(describe("Report usage deltas (node agent)", "Adds byte deltas of this server's peers to their services' usage; `data.accepted` counts the entries counted. Send an `Idempotency-Key` so a retried report counts once."))
      .setHeaders(IdempotencyKey)
      .setPayload(UsageReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeUsageResponse" }))
      .addError(ValidationErrorResponse)
  )
  .add(
    HttpApiEndpoint.post("counters", "/node/counters")
      .annotateContext(describe("Report interface counters (node agent)", "Reports WireGuard's cumulative counters; the server derives the deltas exactly once. Send an `Idempotency-Key` so a retried report counts once."))
      .setHeaders(IdempotencyKey)
      .setPayload(CountersReport)
      .addSuccess(Ok(Accepted, { identifier: "NodeCountersResponse" }))
      .addError(ValidationErrorResponse)
  )
  .middlewareEndpoints(NodeAuthentication)
{}
