import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test"
import { LogLevel } from "effect"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 27: the request log line is written straight to the console in Logger.logFmt's format
// (it cost ~25x more through the fiber logger); same fields as before, never a header, query or body.
// Issue 40: the lines of one turn of the event loop are written together (one console write).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ config: { logLevel: LogLevel.Info } })
})
afterAll(() => app.dispose())

const logged = async (run: () => Promise<unknown>) => {
  const spy = spyOn(console, "log").mockImplementation(() => {})
  try {
    await run()
    // the line is written after the response is sent, with its turn's batch
    const lines = () => spy.mock.calls.flatMap((c) => String(c[0]).split("\n")).filter((line) => line.includes("message=request"))
    for (let i = 0; i < 100 && lines().length === 0; i++) await Bun.sleep(5)
    await Bun.sleep(20)
    return lines()
  } finally {
    spy.mockRestore()
  }
}

describe("request log", () => {
  test("one logfmt line per request: timestamp, level, fiber, method, path (no query), status, ms, request id", async () => {
    const lines = await logged(() =>
      app.get("/v1/plans?secret=do-not-log", { headers: { "x-request-id": "trace-log-1", authorization: "Bearer hidden-token" } })
    )
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(
      /^timestamp=\d{4}-\d\d-\d\dT[\d:.]+Z level=INFO fiber=#\d+ message=request method=GET path=\/v1\/plans status=200 ms=[\d.]+ request_id=trace-log-1$/
    )
    expect(lines[0]).not.toContain("do-not-log")
    expect(lines[0]).not.toContain("hidden-token")
  })

  test("a value with a space or quote is quoted as logfmt does; errors are logged with their status", async () => {
    const lines = await logged(() => app.get("/v1/nope", { headers: { "x-request-id": 'a b"c' } }))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain(`status=404`)
    expect(lines[0]).toContain(`request_id="a b\\"c"`)
  })

  test("a subscription link's token is never logged ([D122]): its path is /s/[token]", async () => {
    const token = "Secret-Link-Token_0123456789abcdefghijklmnop"
    const lines = await logged(() => app.get(`/s/${token}?format=zip`))
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain("path=/s/[token] status=404")
    expect(lines[0]).not.toContain(token)
  })

  test("LOG_LEVEL above info writes no request line", async () => {
    const quiet = await makeTestApp({ config: { logLevel: LogLevel.Warning } })
    try {
      const spy = spyOn(console, "log").mockImplementation(() => {})
      try {
        await quiet.get("/v1/status")
        await new Promise((resolve) => setImmediate(resolve))
        expect(spy.mock.calls.filter((c) => String(c[0]).includes("message=request"))).toHaveLength(0)
      } finally {
        spy.mockRestore()
      }
    } finally {
      await quiet.dispose()
    }
  })
})

test("the lines of requests answered in one turn are written in one console write (issue 40)", async () => {
  const spy = spyOn(console, "log").mockImplementation(() => {})
  try {
    await Promise.all(Array.from({ length: 5 }, (_, i) => app.get("/v1/status", { headers: { "x-request-id": `batch-${i}` } })))
    await Bun.sleep(50)
    const writes = spy.mock.calls.map((c) => String(c[0])).filter((text) => text.includes("request_id=batch-"))
    const lines = writes.flatMap((text) => text.split("\n"))
    expect(lines).toHaveLength(5)
    expect(writes.length).toBeLessThan(5)
  } finally {
    spy.mockRestore()
  }
})
