import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { fieldErrors } from "../http/DecodeIssues.ts"
import type { FieldErrors } from "../platform/Errors.ts"
import { NodeRpcs } from "./NodeProtocol.ts"

/**
 * Issue 34: what `/v1/node/rpc` lets one request cost, checked before the RPC server sees it.
 * In this order: the node token of the request's own `Authorization` header (401, before a byte
 * of the body is read), the body's size (413), the number of calls (422), each call's frame and
 * payload against the protocol's schemas (422: a frame without `headers`, a fractional revision,
 * a NUL in `version`), and the streams the token holds open on this instance (429). Only then is
 * the request handed to `@effect/rpc`, which decodes the same, already checked, text.
 */

/** the calls one request may carry (the agent's client sends one per request) */
export const MAX_RPC_CALLS = 8
/** the `WatchPeers` streams one node token may hold open on one instance (an agent holds one) */
export const MAX_RPC_STREAMS = 4
/** the largest body of a request (a call is a few hundred bytes) */
export const MAX_RPC_BODY_BYTES = 64 * 1024

const refusal = (status: number, message: string, errors?: FieldErrors, headers?: Record<string, string>) =>
  HttpServerResponse.unsafeJson(
    { success: false, message, ...(errors === undefined ? {} : { errors }) },
    { status, ...(headers === undefined ? {} : { headers }) }
  )
const invalid = (errors: FieldErrors) => refusal(422, "The given data was invalid.", errors)

/** one call as the HTTP protocol of `@effect/rpc` frames it (`RpcMessage.RequestEncoded`) */
const Frame = Schema.Struct({
  _tag: Schema.Literal("Request").annotations({ message: () => "Only calls (_tag Request) may be sent." }),
  id: Schema.String.pipe(Schema.pattern(/^\d{1,19}$/)).annotations({ message: () => "The id field must be a string of digits." }),
  tag: Schema.String.pipe(Schema.filter((tag) => NodeRpcs.requests.has(tag))).annotations({
    message: () => "The tag field must name a call of the node protocol."
  }),
  payload: Schema.Unknown,
  headers: Schema.Array(Schema.Tuple(Schema.String, Schema.String))
    .pipe(Schema.maxItems(32))
    .annotations({
      message: () => "The headers field must be an array of at most 32 [name, value] pairs."
    }),
  traceId: Schema.optional(Schema.String),
  spanId: Schema.optional(Schema.String),
  sampled: Schema.optional(Schema.Boolean)
})

const decodeFrame = Schema.decodeUnknownEither(Frame, { errors: "all", onExcessProperty: "ignore" })
const payloadDecoders = new Map(
  [...NodeRpcs.requests].map(([tag, rpc]) => [tag, Schema.decodeUnknownEither(rpc.payloadSchema as Schema.Schema<unknown>, { errors: "all" })])
)

type Checked = { readonly _tag: "Refused"; readonly response: HttpServerResponse.HttpServerResponse } | { readonly _tag: "Calls"; readonly streams: number }

const refused = (response: HttpServerResponse.HttpServerResponse): Checked => ({ _tag: "Refused", response })

/** The body's calls checked against the protocol; how many of them open a stream. */
export const checkCalls = (text: string): Checked => {
  if (Buffer.byteLength(text, "utf8") > MAX_RPC_BODY_BYTES) return refused(refusal(413, "Payload too large."))
  const lines = text.split("\n").filter((line) => line.trim().length > 0)
  if (lines.length === 0) return refused(invalid({ calls: ["The request must carry a call."] }))
  if (lines.length > MAX_RPC_CALLS) return refused(invalid({ calls: [`A request may carry at most ${MAX_RPC_CALLS} calls.`] }))
  let streams = 0
  for (const line of lines) {
    let json: unknown
    try {
      json = JSON.parse(line)
    } catch {
      return refused(invalid({ calls: ["Each call must be one line of JSON."] }))
    }
    const frame = decodeFrame(json)
    if (Either.isLeft(frame)) return refused(invalid(fieldErrors(frame.left.issue)))
    // the request's own header authenticates it: a call may not name another token
    if (frame.right.headers.some(([name]) => name.toLowerCase() === "authorization")) {
      return refused(invalid({ headers: ["A call's headers must not carry authorization: the request's header does."] }))
    }
    const payload = payloadDecoders.get(frame.right.tag)!(frame.right.payload)
    if (Either.isLeft(payload)) return refused(invalid(fieldErrors(payload.left.issue)))
    if (frame.right.tag === "WatchPeers") streams++
  }
  return { _tag: "Calls", streams }
}

/**
 * The guard around the RPC server's HTTP app. `authenticate` answers the server whose node token
 * the `Authorization` header carries. The stream count is this instance's, released when the
 * response ends (the request's scope closes with its stream).
 */
export const guardNodeRpc = (authenticate: (authorization: string | undefined) => Effect.Effect<Option.Option<number>>) => {
  const open = new Map<number, number>()
  return <E>(app: HttpApp.Default<E, Scope.Scope>): HttpApp.Default<E, Scope.Scope> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const server = yield* authenticate(request.headers["authorization"])
      if (Option.isNone(server)) return refusal(401, "Unauthenticated.")
      const text = yield* Effect.option(request.text)
      if (Option.isNone(text)) return invalid({ calls: ["The body could not be read."] })
      const checked = checkCalls(text.value)
      if (checked._tag === "Refused") return checked.response
      if (checked.streams > 0) {
        const serverId = server.value
        const held = open.get(serverId) ?? 0
        if (held + checked.streams > MAX_RPC_STREAMS) {
          return refusal(429, "Too Many Attempts.", undefined, { "retry-after": "5" })
        }
        open.set(serverId, held + checked.streams)
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            const left = (open.get(serverId) ?? 0) - checked.streams
            if (left > 0) open.set(serverId, left)
            else open.delete(serverId)
          })
        )
      }
      return yield* app
    })
}
