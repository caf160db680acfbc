/**
 * Issue 27: what the slowest requests of a path ran into. The server runs with
 * `bench/lib/loop-lag.ts` preloaded, which notes each stall of its event loop; the slowest
 * requests are laid over those stalls: a slow request during a stall in which the process worked
 * waited for the server's own JavaScript (a collection when the heap shrank across it); during a
 * stall in which it hardly used the CPU, for a core of the machine (other processes); without a
 * stall, elsewhere (PostgreSQL, the network).
 */
import { existsSync, readFileSync, rmSync } from "node:fs"

export interface Stall {
  /** epoch ms when the stall ended */
  readonly at: number
  readonly lagMs: number
  /** CPU time of the server's process (all its threads) in the stall */
  readonly cpuMs: number
  readonly heapBeforeMb: number
  readonly heapAfterMb: number
}

/** a request: its start (epoch ms) and how long it took */
export interface Timed {
  readonly start: number
  readonly ms: number
}

/** stalls this long or longer are counted */
const COUNTED_MS = 5

export const LOOP_LAG_PRELOAD = "bench/lib/loop-lag.ts"

export const lagFile = (label: string) => `/tmp/vpn-bench-lag-${process.pid}-${label}.jsonl`

export const clearStalls = (file: string) => rmSync(file, { force: true })

/** the stalls noted in `file` that ended in [from, to] (epoch ms); the server writes them once a second */
export const readStalls = (file: string, from = 0, to = Number.POSITIVE_INFINITY): ReadonlyArray<Stall> =>
  !existsSync(file)
    ? []
    : readFileSync(file, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Stall)
        .filter((s) => s.at >= from && s.at - s.lagMs <= to)

const collected = (s: Stall) => s.heapAfterMb < s.heapBeforeMb
/** the process used under half the stall's time on the CPU: it waited for a core */
const descheduled = (s: Stall) => s.cpuMs < s.lagMs / 2

export interface StallReport {
  /** stalls of COUNTED_MS or more in the window */
  readonly stalls: number
  readonly stallsWithCollection: number
  /** stalls in which the process waited for a core rather than worked */
  readonly stallsWaitingForCore: number
  readonly stallMaxMs: number
  /** the window's time spent in such stalls */
  readonly stalledMs: number
  readonly requests: number
  /** the slowest 2 % of the requests (at least one) */
  readonly slowest: ReadonlyArray<number>
  /** where each of them came in the series (0: the first request): cold connections and statements come first */
  readonly slowestAt: ReadonlyArray<number>
  readonly slowestDuringStall: number
  readonly slowestDuringCollection: number
  readonly slowestDuringWaitForCore: number
  /** of the slowest, those during a stall of the benchmark's own process (its pause, not the server's) */
  readonly slowestDuringClientStall: number
}

export const stallReport = (requests: ReadonlyArray<Timed>, all: ReadonlyArray<Stall>, client: ReadonlyArray<Stall> = []): StallReport => {
  const stalls = all.filter((s) => s.lagMs >= COUNTED_MS)
  const series = [...requests].sort((a, b) => a.start - b.start)
  const slow = [...series].sort((a, b) => b.ms - a.ms).slice(0, Math.max(1, Math.ceil(requests.length * 0.02)))
  const overlapping = (list: ReadonlyArray<Stall>) => (r: Timed) => list.filter((s) => s.at - s.lagMs < r.start + r.ms && s.at > r.start)
  const during = overlapping(stalls)
  const hits = slow.map(during)
  const clientHits = slow.map(overlapping(client.filter((s) => s.lagMs >= COUNTED_MS)))
  return {
    requests: requests.length,
    stalls: stalls.length,
    stallsWithCollection: stalls.filter(collected).length,
    stallsWaitingForCore: stalls.filter(descheduled).length,
    stallMaxMs: Math.max(0, ...stalls.map((s) => s.lagMs)),
    stalledMs: Math.round(stalls.reduce((t, s) => t + s.lagMs, 0)),
    slowest: slow.map((r) => Math.round(r.ms * 10) / 10),
    slowestAt: slow.map((r) => series.indexOf(r)),
    slowestDuringStall: hits.filter((h) => h.length > 0).length,
    slowestDuringCollection: hits.filter((h) => h.some(collected)).length,
    slowestDuringWaitForCore: hits.filter((h) => h.length > 0 && h.every(descheduled)).length,
    slowestDuringClientStall: clientHits.filter((h) => h.length > 0).length
  }
}

export const describeStalls = (r: StallReport) =>
  `server event-loop stalls >= ${COUNTED_MS} ms: ${r.stalls} (${r.stallsWithCollection} with a collection, ${r.stallsWaitingForCore} waiting for a core), ` +
  `max ${r.stallMaxMs} ms, ${r.stalledMs} ms in all; the ${r.slowest.length} slowest requests (${r.slowest.slice(0, 8).join(", ")}${r.slowest.length > 8 ? ", ..." : ""} ms, at #${r.slowestAt.slice(0, 8).join(", #")} of ${r.requests}): ` +
  `${r.slowestDuringStall} during a stall (${r.slowestDuringCollection} a collection, ${r.slowestDuringWaitForCore} only waiting for a core); ` +
  `${r.slowestDuringClientStall} during a stall of the benchmark's own process`
