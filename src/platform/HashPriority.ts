import { readdirSync, readFileSync } from "node:fs"

/**
 * Password hashing at a lower CPU priority than the event loop (issue 8).
 *
 * `Bun.password` runs argon2id on Bun's own thread pool ("Bun Pool N" threads). On a small
 * machine those threads and the event loop share the cores, and a login flood took the CPU from
 * everything else: `GET /v1/plans` p99 more than doubled. Linux schedules threads one by one, so
 * each pool thread gets a nice value of `HASH_NICE` (10): when the event loop has work it
 * preempts a hash at once, and when it has none the hash gets the whole core (logins lose
 * nothing while the rest is idle). Best effort: where `/proc` or `setpriority` is missing
 * (another OS) nothing changes.
 */
export const HASH_NICE = 10

type SetPriority = (which: number, who: number, prio: number) => number

let setPriority: SetPriority | null | undefined
const loadSetPriority = (): SetPriority | null => {
  if (setPriority !== undefined) return setPriority
  setPriority = null
  if (process.platform !== "linux") return null
  for (const name of ["libc.so.6", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const ffi = require("bun:ffi") as typeof import("bun:ffi")
      const lib = ffi.dlopen(name, { setpriority: { args: ["i32", "u32", "i32"], returns: "i32" } })
      setPriority = (which, who, prio) => lib.symbols.setpriority(which, who, prio) as number
      break
    } catch {
      // try the next name
    }
  }
  return setPriority
}

const PRIO_PROCESS = 0
const lowered = new Set<number>()
let seenThreads = ""

/** Lowers the priority of pool threads not seen before; cheap when none appeared. */
export const lowerHashingThreads = (): void => {
  const set = loadSetPriority()
  if (set === null) return
  let tasks: Array<string>
  try {
    tasks = readdirSync("/proc/self/task")
  } catch {
    return
  }
  const seen = tasks.join(",")
  if (seen === seenThreads) return
  seenThreads = seen
  for (const task of tasks) {
    const tid = Number(task)
    if (lowered.has(tid)) continue
    try {
      if (!readFileSync(`/proc/self/task/${task}/comm`, "utf8").startsWith("Bun Pool")) continue
      if (set(PRIO_PROCESS, tid, HASH_NICE) === 0) lowered.add(tid)
    } catch {
      // the thread ended meanwhile
    }
  }
}

/** The nice value of each pool thread (tests, diagnostics). */
export const hashingThreadNices = (): Array<{ readonly tid: number; readonly nice: number }> => {
  try {
    return readdirSync("/proc/self/task").flatMap((task) => {
      if (!readFileSync(`/proc/self/task/${task}/comm`, "utf8").startsWith("Bun Pool")) return []
      const fields = readFileSync(`/proc/self/task/${task}/stat`, "utf8").split(") ")[1]!.split(" ")
      return [{ tid: Number(task), nice: Number(fields[16]) }]
    })
  } catch {
    return []
  }
}
