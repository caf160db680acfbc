import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** The largest body the API takes ([D11]); no more than this of any body is ever kept. */
export const MAX_BODY_BYTES = 1024 * 1024

/**
 * How much of an oversized body is read and thrown away before the 413, and for how long ([D11],
 * issue 19). Answering with unread bytes in the socket's receive buffer and then closing (the
 * client's `Connection: close`, or a cap) makes the kernel send a reset, which destroys the 413
 * before the client reads it; a body read to its end leaves nothing to reset. Bun's own limit
 * (`maxRequestBodySize`) is this cap: past it Bun answers its own bare 413.
 */
export const DRAIN_MAX_BYTES = 16 * 1024 * 1024
export const DRAIN_MAX_MILLIS = 5_000

/**
 * The 413 envelope. A body read to its end leaves the connection clean (kept alive if the client
 * wants it); one given up (past the cap or the time) closes it.
 */
const payloadTooLarge = (drained: boolean) =>
  HttpServerResponse.unsafeJson({ success: false, message: "Payload too large." }, { status: 413, ...(drained ? {} : { headers: { connection: "close" } }) })

type Outcome =
  /** the whole body, within the limit */
  | { readonly _tag: "Read"; readonly body: Uint8Array<ArrayBuffer> }
  /** over the limit; `drained` when it was read to its end */
  | { readonly _tag: "TooLarge"; readonly drained: boolean }
  /** the body broke off within the limit (the client went away, a malformed chunk) */
  | { readonly _tag: "Broken" }

const nextChunk = (reader: ReadableStreamDefaultReader<Uint8Array>): Effect.Effect<Uint8Array | "end" | "broken"> =>
  Effect.tryPromise(() => reader.read()).pipe(
    Effect.map((result) => (result.done ? ("end" as const) : result.value)),
    Effect.orElseSucceed(() => "broken" as const)
  )

/**
 * Reads and drops the rest of a body too large to take ([D11]), `bytes` of it read already: up to
 * `DRAIN_MAX_BYTES` in all, for at most `DRAIN_MAX_MILLIS`; true when its end was reached. What is
 * left then stays unread, never cancelled: a cancelled request body makes Bun drop the connection
 * before the 413 is written. Interruptible: the platform runs the app uninterruptibly, where the
 * time limit could not stop a read waiting on a stalled client.
 */
const drain = (reader: ReadableStreamDefaultReader<Uint8Array>, bytes: number): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    let total = bytes
    for (;;) {
      const next = yield* nextChunk(reader)
      if (next === "end") return true
      if (next === "broken") return false
      total += next.byteLength
      if (total > DRAIN_MAX_BYTES) return false
    }
  }).pipe(Effect.timeoutOption(DRAIN_MAX_MILLIS), Effect.map(Option.getOrElse(() => false)), Effect.interruptible)

const concat = (chunks: ReadonlyArray<Uint8Array>, bytes: number): Uint8Array<ArrayBuffer> => {
  const body = new Uint8Array(bytes)
  let at = 0
  for (const chunk of chunks) {
    body.set(chunk, at)
    at += chunk.byteLength
  }
  return body
}

/**
 * A body of unknown length (chunked): read while it is within `MAX_BODY_BYTES`, its chunks kept;
 * past that it is too large, what was kept is let go, and the rest is drained.
 */
const readWithin = (reader: ReadableStreamDefaultReader<Uint8Array>): Effect.Effect<Outcome> =>
  Effect.gen(function* () {
    const kept: Array<Uint8Array> = []
    let bytes = 0
    for (;;) {
      const next = yield* nextChunk(reader)
      if (next === "end") return { _tag: "Read", body: concat(kept, bytes) } as const
      if (next === "broken") return { _tag: "Broken" } as const
      bytes += next.byteLength
      if (bytes > MAX_BODY_BYTES) {
        kept.length = 0
        return { _tag: "TooLarge", drained: yield* drain(reader, bytes) } as const
      }
      kept.push(next)
    }
  }).pipe(Effect.interruptible)

/** The request's body as a web stream: the runtime's own `Request` (Bun, `toWebHandler`), else the platform's stream. */
const bodyStream = (request: HttpServerRequest.HttpServerRequest): ReadableStream<Uint8Array> | null =>
  request.source instanceof Request ? request.source.body : Stream.toReadableStream(request.stream)

/** The same request, its body now the bytes read (the runtime's body is spent): what the handlers read. */
const withBody = (request: HttpServerRequest.HttpServerRequest, body: Uint8Array<ArrayBuffer>): HttpServerRequest.HttpServerRequest =>
  HttpServerRequest.fromWeb(new Request(new URL(request.originalUrl, "http://localhost"), { method: request.method, headers: request.headers, body })).modify({
    url: request.url,
    headers: request.headers,
    ...Option.match(request.remoteAddress, { onNone: () => ({}), onSome: (remoteAddress) => ({ remoteAddress }) })
  })

/**
 * 413 in the envelope for bodies over 1 MiB ([D11]), by `Content-Length` or by counting a chunked
 * body; either way the rest of the body is read and dropped first (issue 19), so the client reads
 * the 413 instead of a reset. A chunked body within the limit is handed on, read (at most 1 MiB).
 */
export const bodyLimit = (app: HttpApp.Default): HttpApp.Default =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    // bodiless methods pass straight through: no generator on the hot read path (issue 8)
    if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return app
    const declared = request.headers["content-length"]
    if (declared !== undefined) {
      const length = Number(declared)
      if (!(length > MAX_BODY_BYTES)) return app
      // more than the drain would read: nothing to gain by reading part of it
      if (length > DRAIN_MAX_BYTES) return Effect.succeed(payloadTooLarge(false))
      const stream = bodyStream(request)
      if (stream === null) return Effect.succeed(payloadTooLarge(false))
      return Effect.map(drain(stream.getReader(), 0), payloadTooLarge)
    }
    const stream = bodyStream(request)
    if (stream === null) return app
    return Effect.flatMap(readWithin(stream.getReader()), (outcome) => {
      switch (outcome._tag) {
        case "Read":
          return Effect.provideService(app, HttpServerRequest.HttpServerRequest, withBody(request, outcome.body))
        case "TooLarge":
          return Effect.succeed(payloadTooLarge(outcome.drained))
        case "Broken":
          // the body is spent: the handler's own read fails as a bad body, as it would have
          return app
      }
    })
  })
