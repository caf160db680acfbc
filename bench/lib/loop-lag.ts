/**
 * Preloaded into a benchmark's server (`bun run --preload bench/lib/loop-lag.ts src/main.ts`, issue 27)
 * when `LOOP_LAG_FILE` is set: a timer every 5 ms notes each stall of the event loop of 2 ms or more
 * (how late the timer fired) with the JavaScript heap before and after it and the CPU time the
 * process used in it, one JSON line per stall: `{at, lagMs, cpuMs, heapBeforeMb, heapAfterMb}`
 * (`at`: epoch ms when the stall ended). A heap that shrank across the stall means the collector
 * ran in it; CPU time well below the stall means the process was waiting for a core of the machine
 * (other processes), not working. The benchmark lays these stalls over its slowest requests to
 * tell the server's own pauses from waiting on PostgreSQL or a core, and runs the same probe on
 * itself (`startLoopLag`): a pause of the measuring process makes requests look slow that the
 * server answered in time.
 *
 * The probe must cost the server nothing it would notice. The heap is
 * `process.memoryUsage().heapUsed` (≈ 6 µs a read, tens under load), read after each stall of 5 ms
 * or more and every 100 ms. Until the third session of issue 27 it was `heapSize()` of `bun:jsc`,
 * which walks the heap (≈ 280 µs at 150 MB, milliseconds on a busy server), read every 5 ms: a
 * CPU profile of the node list found it taking a sixth of the server's thread, slowing every
 * figure the probe was there to explain.
 */
import { appendFileSync } from "node:fs"

const INTERVAL_MS = 5
const REPORT_MS = 2
/** stalls the stall report counts (bench/scale/stalls.ts) */
const HEAP_STALL_MS = 5

/** notes this process's event-loop stalls in `file` until it exits */
export const startLoopLag = (file: string) => {
  const heap = () => process.memoryUsage().heapUsed
  let pending: Array<string> = []
  let expected = performance.now() + INTERVAL_MS
  let heapBefore = heap()
  let ticks = 0
  let cpuBefore = process.cpuUsage()
  const tick = () => {
    const now = performance.now()
    const lag = now - expected
    const cpu = process.cpuUsage(cpuBefore)
    // the heap after every stall the report counts, else every 20th tick (100 ms): "before" a
    // stall is then at most 100 ms old
    const heapAfter = lag >= HEAP_STALL_MS || ++ticks % 20 === 0 ? heap() : heapBefore
    if (lag >= REPORT_MS) {
      pending.push(
        JSON.stringify({
          at: Math.round(performance.timeOrigin + now),
          lagMs: Math.round(lag * 10) / 10,
          cpuMs: Math.round((cpu.user + cpu.system) / 100) / 10,
          heapBeforeMb: Math.round(heapBefore / 1e5) / 10,
          heapAfterMb: Math.round(heapAfter / 1e5) / 10
        })
      )
    }
    heapBefore = heapAfter
    cpuBefore = process.cpuUsage()
    expected = performance.now() + INTERVAL_MS
    setTimeout(tick, INTERVAL_MS).unref()
  }
  setTimeout(tick, INTERVAL_MS).unref()
  // written in bulk once a second, so that the probe's own writes do not make stalls
  setInterval(() => {
    if (pending.length === 0) return
    appendFileSync(file, `${pending.join("\n")}\n`)
    pending = []
  }, 1000).unref()
}

const file = process.env.LOOP_LAG_FILE
if (file) startLoopLag(file)
