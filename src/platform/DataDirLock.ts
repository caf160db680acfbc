import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { closeSync, constants, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs"
import { createConnection } from "node:net"
import { join } from "node:path"

/**
 * One process at a time on an embedded `DATA_DIR` (issue 34). PGlite is one process's database:
 * a second process opening the same cluster (a CLI command beside `npm start`, a second start)
 * writes into files the first one holds in memory, and the first one's copy wins. So the process
 * takes an exclusive `flock` on `DATA_DIR/vpn-api.lock` before it opens the database and keeps the
 * descriptor open while it runs. The kernel drops the lock when the process ends, however it ends:
 * a killed server leaves no stale lock. Where `flock` cannot be called (no libc to load), the pid
 * written into the file, checked for liveness, stands in.
 */
export class DataDirInUse extends Schema.TaggedError<DataDirInUse>()("DataDirInUse", {
  dataDir: Schema.String,
  message: Schema.String
}) {}

export const LOCK_FILE = "vpn-api.lock"
export const SOCKET_NAME = ".s.PGSQL.5432"

export const inUse = (root: string) => new DataDirInUse({ dataDir: root, message: `a server is running on ${root}: stop it first` })

const LOCK_EX = 2
const LOCK_NB = 4

interface Flock {
  /** 0 locked, 1 held by another process, -1 not supported here */
  readonly lock: (fd: number) => 0 | 1 | -1
}

let flock: Flock | null | undefined

const loadFlock = async (): Promise<Flock | null> => {
  if (flock !== undefined) return flock
  try {
    const { dlopen, FFIType, read } = await import("bun:ffi")
    const darwin = process.platform === "darwin"
    const errnoSymbol = darwin ? "__error" : "__errno_location"
    const libc = dlopen(darwin ? "libc.dylib" : "libc.so.6", {
      flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
      [errnoSymbol]: { args: [], returns: FFIType.ptr }
    })
    const wouldBlock = darwin ? 35 : 11
    flock = {
      lock: (fd) => {
        if (libc.symbols.flock(fd, LOCK_EX | LOCK_NB) === 0) return 0
        const at = (libc.symbols[errnoSymbol] as () => number | null)()
        const errno = at === null ? -1 : read.i32(at as never, 0)
        return errno === wouldBlock ? 1 : -1
      }
    }
  } catch {
    flock = null
  }
  return flock
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** The pid a lock file names, when another live process. */
const livePidIn = (path: string) => {
  try {
    const pid = Number.parseInt(readFileSync(path, "utf8").trim(), 10)
    return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)
  } catch {
    return false
  }
}

/**
 * Whether a server holds the embedded database's socket in `dir`. Only a refused connection (or
 * no file) means nobody listens (a file left by a process that was killed); a reset is a server
 * that took its one connection already.
 */
export const socketAnswers = (dir: string) =>
  Effect.async<boolean>((resume) => {
    const path = join(dir, SOCKET_NAME)
    if (!existsSync(path)) return resume(Effect.succeed(false))
    const socket = createConnection({ path })
    let settled = false
    const done = (answer: boolean) => {
      if (settled) return
      settled = true
      socket.destroy()
      resume(Effect.succeed(answer))
    }
    socket.once("connect", () => done(true))
    socket.once("error", (e: NodeJS.ErrnoException) => done(e.code !== "ECONNREFUSED" && e.code !== "ENOENT"))
    socket.setTimeout(2_000, () => done(true))
  })

/**
 * Takes `root`'s lock for the scope (the directory exists). Fails with `DataDirInUse` while another
 * process holds it, or while a server (of a version before this lock) answers on its socket.
 */
export const lockDataDir = (root: string) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const path = join(root, LOCK_FILE)
      const impl = yield* Effect.promise(loadFlock)
      const fd = yield* Effect.try({
        try: () => openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600),
        catch: (cause) => new DataDirInUse({ dataDir: root, message: `cannot open ${path}: ${cause instanceof Error ? cause.message : String(cause)}` })
      })
      const got = impl === null ? -1 : impl.lock(fd)
      if (got === 1 || (got === -1 && livePidIn(path))) {
        closeSync(fd)
        return yield* Effect.fail(inUse(root))
      }
      ftruncateSync(fd, 0)
      writeSync(fd, `${process.pid}\n`, 0)
      if (yield* socketAnswers(root)) {
        closeSync(fd)
        return yield* Effect.fail(inUse(root))
      }
      return fd
    }),
    // closing the descriptor drops the lock; the file stays (removing a locked file races a newcomer)
    (fd) => Effect.sync(() => closeSync(fd))
  )
