/** Child processes and what /proc says about them (CPU ticks, resident memory). */
import { readdirSync, readFileSync, writeFileSync } from "node:fs"

/** Runs a command to completion; throws with its output when it fails. */
export const run = (cmd: ReadonlyArray<string>, env: Record<string, string> = {}): string => {
  const p = Bun.spawnSync([...cmd], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" })
  if (p.exitCode !== 0) {
    throw new Error(`${cmd.join(" ")} exited ${p.exitCode}: ${p.stderr.toString()}${p.stdout.toString()}`)
  }
  return p.stdout.toString()
}

/** A port nobody listens on right now (asked from the kernel, then released). */
export const freePort = (): number => {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return port
}

const CLK_TCK = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100
export const TICK_US = 1_000_000 / CLK_TCK

/** utime + stime of a process (all its threads), in clock ticks. */
export const cpuTicks = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

/**
 * CPU of PostgreSQL in clock ticks: utime + stime of every live postgres process plus cutime +
 * cstime (what the postmaster has collected from backends that already ended), so that a backend
 * closing during a run does not take its time with it.
 */
export const postgresTicks = (): number => {
  let total = 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (!stat.includes("(postgres)")) continue
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
    } catch {
      // the process ended meanwhile
    }
  }
  return total
}

const statusField = (pid: number, field: string): number | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)
    return match ? Number(match[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

/** Resident memory now, MiB. */
export const rssMb = (pid: number) => statusField(pid, "VmRSS")
/** Peak resident memory since start or since the last `resetPeak`, MiB. */
export const peakRssMb = (pid: number) => statusField(pid, "VmHWM")

/** Resets VmHWM to the current RSS (Linux `clear_refs` 5); false when not allowed. */
export const resetPeak = (pid: number): boolean => {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5")
    return true
  } catch {
    return false
  }
}
