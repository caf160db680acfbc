import type { Subprocess } from "bun"
import { afterAll } from "bun:test"

/**
 * Issue 23, item 16: no process a test starts outlives the test run. Bun does not stop the
 * children of `Bun.spawn` when `bun test` exits (a server whose test timed out, or whose file
 * failed before its `finally`, kept running), so every child is tracked here and killed on exit.
 */
const children = new Set<Subprocess>()
const spawn = Bun.spawn

const tracked = ((...args: Parameters<typeof spawn>) => {
  const child = spawn(...args)
  children.add(child)
  void child.exited.then(() => children.delete(child))
  return child
}) as typeof spawn

// `Bun.spawn` is writable (not configurable): replaced in place for every test file of the run
Object.assign(Bun, { spawn: tracked })

const killAll = () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL")
    } catch {
      // gone meanwhile
    }
  }
}
// a hook in the preload runs when the whole run ends; `exit` does not fire under `bun test`
afterAll(killAll)
process.on("exit", killAll)
