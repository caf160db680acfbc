import { afterAll, describe, expect, test } from "bun:test"
import { announceSkip, freePort, freshDatabase, newAppKey, type RunningServer, skipReason, startServer } from "./harness.ts"

/**
 * Issue 18 (the container): compose starts PostgreSQL and the API at once, so the API must wait
 * for a database that is still starting instead of exiting. The database's port answers nothing
 * for the first seconds (a TCP relay to the real server opens late).
 */
announceSkip("late database")
const servers: Array<RunningServer> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

describe.skipIf(skipReason !== undefined)("start-up waits for a database that is not up yet", () => {
  test("refused connections for 3 s: the server starts once the database answers, and says it waited", async () => {
    const db = await freshDatabase("late")
    const target = new URL(db.url)
    const port = await freePort()
    const lateUrl = new URL(db.url)
    lateUrl.port = String(port)
    let relay: { stop(closeActiveConnections?: boolean): void } | undefined
    setTimeout(() => {
      relay = Bun.listen<{ upstream?: Bun.Socket<undefined>; pending: Array<Uint8Array> }>({
        hostname: "127.0.0.1",
        port,
        socket: {
          open(client) {
            client.data = { pending: [] }
            void Bun.connect({
              hostname: target.hostname,
              port: Number(target.port),
              socket: {
                data(_, chunk) {
                  client.write(chunk)
                },
                close() {
                  client.end()
                }
              }
            }).then((upstream) => {
              client.data.upstream = upstream
              for (const chunk of client.data.pending) upstream.write(chunk)
            })
          },
          data(client, chunk) {
            if (client.data.upstream) client.data.upstream.write(chunk)
            else client.data.pending.push(new Uint8Array(chunk))
          },
          close(client) {
            client.data.upstream?.end()
          }
        }
      })
    }, 3000)
    const started = performance.now()
    const server = await startServer({ databaseUrl: lateUrl.toString(), appKey: newAppKey() })
    servers.push(server)
    expect(performance.now() - started).toBeGreaterThan(2500)
    expect(server.output()).toContain("the database is not reachable yet; retrying")
    const status = await fetch(`${server.base}/v1/status`)
    expect(status.status).toBe(200)
    expect((await status.json()).data.database).toBe("ok")
    await server.stop()
    relay?.stop(true)
  }, 60_000)
})
