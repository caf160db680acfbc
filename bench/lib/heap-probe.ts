/**
 * Preloaded into the soak's instances (`bun run --preload bench/lib/heap-probe.ts src/main.ts`,
 * issue 27) when `HEAP_PROBE_FILE` is set, to tell a leak from the collector's high-water mark:
 *  - every 250 ms it reads the JavaScript heap (`process.memoryUsage().heapUsed`) and once a second writes
 *    one JSON line `{at, rssMb, heapMinMb, heapMaxMb}`: the smallest heap of the second is close to
 *    what was live after the last collection, the largest is how far garbage piled up before one;
 *  - on SIGUSR2 it runs a full, synchronous collection and writes `{at, fullGc: true, ms, rssMb,
 *    heapMb}`: the live heap at that moment, and what RSS is left once the garbage is gone.
 * A live heap that climbs window after window is a leak; a flat live heap under a rising RSS is
 * memory the allocator keeps (the high-water mark), not objects the server holds.
 */
import { appendFileSync } from "node:fs"
import { heapSize } from "bun:jsc"

const file = process.env.HEAP_PROBE_FILE
const mb = (bytes: number) => Math.round(bytes / 1e5) / 10

if (file) {
  let min = Number.POSITIVE_INFINITY
  let max = 0
  let samples = 0
  setInterval(() => {
    // `heapUsed` costs microseconds; `heapSize()` walks the heap (kept for the two full collections)
    const h = process.memoryUsage().heapUsed
    if (h < min) min = h
    if (h > max) max = h
    if (++samples % 4 !== 0) return
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), rssMb: mb(process.memoryUsage.rss()), heapMinMb: mb(min), heapMaxMb: mb(max) })}\n`)
    min = Number.POSITIVE_INFINITY
    max = 0
  }, 250).unref()
  process.on("SIGUSR2", () => {
    const t = performance.now()
    Bun.gc(true)
    const ms = Math.round((performance.now() - t) * 10) / 10
    appendFileSync(file, `${JSON.stringify({ at: Date.now(), fullGc: true, ms, rssMb: mb(process.memoryUsage.rss()), heapMb: mb(heapSize()) })}\n`)
  })
}
