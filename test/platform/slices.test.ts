import { describe, expect, test } from "bun:test"
import * as Effect from "effect/Effect"
import { mapSliced } from "../../src/platform/Slices.ts"

// Issue 27: a jobs batch renders and encrypts its mails in slices of a few ms
// (Notifications.notifyMany, Outbox.enqueueMails), handing the thread to waiting requests between.
const busy = (ms: number) => {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // CPU work, as rendering and encrypting a mail is
  }
}

describe("mapSliced", () => {
  test("maps like Array.map, in order", async () => {
    const out = await Effect.runPromise(mapSliced([1, 2, 3, 4], (n) => n * 10, 0))
    expect(out).toEqual([10, 20, 30, 40])
  })

  test("a request waiting on a socket is answered in the middle of a long map, not after it", async () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") })
    try {
      let done = false
      let answeredBeforeDone: boolean | undefined
      // the request is sent, then 100 items of 2 ms of CPU each (200 ms in one stretch without slices)
      const request = fetch(`http://127.0.0.1:${server.port}/`).then(async (res) => {
        await res.text()
        answeredBeforeDone = !done
      })
      const out = await Effect.runPromise(
        mapSliced(
          Array.from({ length: 100 }, (_, i) => i),
          (i) => {
            busy(2)
            return i
          },
          4
        )
      )
      done = true
      await request
      expect(out.length).toBe(100)
      expect(answeredBeforeDone).toBe(true)
    } finally {
      server.stop(true)
    }
  })

  test("the same work without slices answers the request only after it (what the test above rules out)", async () => {
    const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") })
    try {
      let done = false
      let answeredBeforeDone: boolean | undefined
      const request = fetch(`http://127.0.0.1:${server.port}/`).then(async (res) => {
        await res.text()
        answeredBeforeDone = !done
      })
      await Effect.runPromise(Effect.sync(() => Array.from({ length: 100 }, (_, i) => (busy(2), i))))
      done = true
      await request
      expect(answeredBeforeDone).toBe(false)
    } finally {
      server.stop(true)
    }
  })
})
