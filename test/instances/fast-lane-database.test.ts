import { afterAll, describe, expect, test } from "bun:test"
import { dirname, join } from "node:path"
import { announceSkip, asPostgres, freshDatabase, newAppKey, PG_BIN, type RunningServer, skipReason, startServer } from "./harness.ts"

/*
 * Issue 27: the fast lane (`src/http/FastLane.ts`) with the database stopped. Two servers on one
 * PostgreSQL, lane on and `FAST_LANE=false`: with the database down, `/v1/status` is the 503 of
 * [D10] from both, and `/v1/plans` (the catalogue cache's LISTEN connection lost, so the lane
 * hands it to the pipeline, which reads the database) answers the same; after the restart, the
 * same again. Statuses, bytes, every header but `date` and the request log lines compared.
 * Needs `TEST_DATABASE_URL` and `PG_DATA_DIR` (`scripts/with-postgres.sh`).
 */
announceSkip("fast-lane-database")
const dataDir = process.env["PG_DATA_DIR"]

const pgCtl = async (args: ReadonlyArray<string>) => {
  const child = Bun.spawn(asPostgres([`${PG_BIN}/pg_ctl`, "-D", dataDir!, ...args]), { stdout: "ignore", stderr: "pipe" })
  const code = await child.exited
  if (code !== 0) throw new Error(`pg_ctl ${args.join(" ")}: ${await new Response(child.stderr).text()}`)
}

const answer = async (base: string, method: string, path: string, id: string) => {
  const res = await fetch(`${base}${path}`, { method, headers: { "x-request-id": id }, signal: AbortSignal.timeout(10_000) })
  const headers = [...res.headers.entries()].filter(([name]) => name !== "date").sort(([a], [b]) => a.localeCompare(b))
  return { status: res.status, body: await res.text(), headers }
}

const requestLines = (server: RunningServer, from: number) =>
  server.output().slice(from).split("\n").filter((line) => line.includes("message=request")).map((line) =>
    line.replace(/^timestamp=\S+ /, "").replace(/fiber=#\d+/, "fiber=#").replace(/ms=[\d.]+/, "ms=")
  )

const servers: Array<RunningServer> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

describe.skipIf(skipReason !== undefined || dataDir === undefined)("fast lane with the database stopped", () => {
  test("status 503 and the plans read through the pipeline, the same from lane and pipeline, before and after the restart", async () => {
    const db = await freshDatabase("fastlane")
    const env = { LOG_LEVEL: "info", GENERAL_RATE_LIMIT: "0" }
    const appKey = newAppKey()
    const on = await startServer({ databaseUrl: db.url, appKey, env: { ...env, FAST_LANE: "true" } })
    servers.push(on)
    const off = await startServer({ databaseUrl: db.url, appKey, env: { ...env, FAST_LANE: "false" } })
    servers.push(off)
    const logFrom = { on: on.output().length, off: off.output().length }

    const round = async (label: string, expected: { status: number; plans: number }) => {
      for (const [method, path] of [["GET", "/v1/status"], ["HEAD", "/v1/status"], ["GET", "/v1/plans"], ["HEAD", "/v1/plans?x=1"]] as const) {
        const id = `${label}-${method}-${path}`
        const [a, b] = [await answer(on.base, method, path, id), await answer(off.base, method, path, id)]
        expect({ id, ...a }).toEqual({ id, ...b })
        expect({ id, status: a.status, body: a.body }).toMatchObject({ id, status: path === "/v1/status" ? expected.status : expected.plans })
      }
    }

    await round("up", { status: 200, plans: 200 })
    await pgCtl(["-m", "fast", "-w", "stop"])
    try {
      // the LISTEN connections see the loss: neither cache answers from memory now
      await Bun.sleep(1500)
      await round("down", { status: 503, plans: 503 })
    } finally {
      // `restart` starts it again with the options it ran with (its port), as the faults suite does
      await pgCtl(["-l", join(dirname(dataDir!), "log"), "-w", "restart"])
    }
    // back when both answer both paths (a pooled connection cut by the stop fails its next query once)
    for (let i = 0, ok = 0; i < 200 && ok < 5; i++) {
      const answers = await Promise.all([on.base, off.base].flatMap((base) => [fetch(`${base}/v1/status`), fetch(`${base}/v1/plans`)]))
      ok = answers.every((res) => res.status === 200) ? ok + 1 : 0
      await Bun.sleep(100)
    }
    await round("again", { status: 200, plans: 200 })
    await Bun.sleep(100)
    const linesOn = requestLines(on, logFrom.on).filter((l) => /request_id="?(up|down|again)-/.test(l))
    expect(linesOn).toEqual(requestLines(off, logFrom.off).filter((l) => /request_id="?(up|down|again)-/.test(l)))
    expect(linesOn.filter((l) => l.includes("status=503"))).toHaveLength(4)
  }, 120_000)
})
