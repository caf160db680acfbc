import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { NodeListEntry } from "./Access.ts"

const encoder = new TextEncoder()

/**
 * Issue 27: the full node list written as its pages are read: the bytes the route's schema
 * (`NodePeerList`: `{success: true, data: [...], meta: {revision}}`) encodes to, each page
 * `JSON.stringify`d as it is (the key order of `nodeEntry` and of [D106]'s credential entries),
 * so only the pages in flight are held. `done` is told the number of entries once all are written.
 */
export const streamedNodeList = (
  revision: number,
  pages: Stream.Stream<ReadonlyArray<NodeListEntry>>,
  done: (entries: number) => Effect.Effect<void>
): HttpServerResponse.HttpServerResponse => {
  let written = 0
  const body = pages.pipe(
    Stream.filter((page) => page.length > 0),
    Stream.map((page) => {
      // the page as one array, brackets off: the entries joined by commas, as the whole list writes them
      const json = JSON.stringify(page).slice(1, -1)
      const chunk = written === 0 ? json : `,${json}`
      written += page.length
      return encoder.encode(chunk)
    }),
    Stream.prepend(Chunk.of(encoder.encode(`{"success":true,"data":[`))),
    Stream.concat(Stream.suspend(() => Stream.fromEffect(Effect.as(done(written), encoder.encode(`],"meta":{"revision":${JSON.stringify(revision)}}}`)))))
  )
  return HttpServerResponse.stream(body, { contentType: "application/json" })
}
