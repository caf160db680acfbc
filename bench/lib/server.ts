/** An API server of this checkout as a child process, for the benchmarks (scale, soak, push). */
import { resolve } from "node:path"
import { freePort } from "./proc.ts"

const ROOT = resolve(import.meta.dir, "../..")

export interface Server {
  readonly base: string
  readonly proc: Bun.Subprocess
}

/**
 * Starts `src/main.ts` on a free port with `env` and waits up to 120 s for `GET /v1/status` 200;
 * `preload`: modules loaded into the server before it (e.g. `bench/lib/loop-lag.ts`).
 * `BENCH_SERVER_FLAGS` (space-separated) go to Bun before `run`: `--cpu-prof-md --cpu-prof-dir=/tmp/prof`
 * writes a CPU profile of each server when it stops (how the probe's cost was found, issue 27).
 */
export const startServer = async (
  env: Record<string, string>,
  options: { readonly stderr?: "pipe" | "inherit"; readonly preload?: ReadonlyArray<string> } = {}
): Promise<Server> => {
  const port = freePort()
  const stderr = options.stderr ?? "pipe"
  const preload = (options.preload ?? []).flatMap((p) => ["--preload", resolve(ROOT, p)])
  const flags = process.env.BENCH_SERVER_FLAGS?.split(" ").filter(Boolean) ?? []
  const proc = Bun.spawn([process.execPath, ...flags, "run", ...preload, "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port) },
    stdout: "ignore",
    stderr
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = performance.now() + 120_000
  for (;;) {
    if (proc.exitCode !== null) {
      const output = stderr === "pipe" && proc.stderr instanceof ReadableStream ? await new Response(proc.stderr).text() : ""
      throw new Error(`server exited ${proc.exitCode}: ${output}`)
    }
    try {
      const res = await fetch(`${base}/v1/status`)
      await res.arrayBuffer()
      if (res.status === 200) return { base, proc }
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) {
      proc.kill("SIGKILL")
      throw new Error("server not ready within 120 s")
    }
    await Bun.sleep(50)
  }
}

/** SIGTERM, then SIGKILL after 15 s. */
export const stopServer = async (s: Server) => {
  s.proc.kill("SIGTERM")
  const exited = await Promise.race([s.proc.exited.then(() => true), Bun.sleep(15_000).then(() => false)])
  if (!exited) s.proc.kill("SIGKILL")
}
