import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"

// [D5]: SIGTERM stops the server after the requests in flight finish, and the process exits 0.
const dataDir = mkdtempSync(join(tmpdir(), "vpn-shutdown-"))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

test("a request in flight at SIGTERM still gets its response, then the process exits 0", async () => {
  const port = 20000 + Math.floor(Math.random() * 20000)
  const child = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: "error" },
    stdout: "ignore",
    stderr: "ignore"
  })
  await waitForStatus(port)

  // a chunked body that is only half sent keeps the request in flight
  const socket = connect(port, "127.0.0.1")
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()))
  let response = ""
  socket.on("data", (chunk) => (response += chunk.toString()))
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()))
  socket.write("POST /v1/status HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + '5\r\n{"a":\r\n')
  await Bun.sleep(300)
  child.kill("SIGTERM")
  await Bun.sleep(500)
  socket.write("2\r\n1}\r\n0\r\n\r\n")
  await Promise.race([closed, Bun.sleep(5000)])
  socket.destroy()

  expect(response).toContain("HTTP/1.1 405")
  expect(response).toContain("Method not allowed.")
  const code = await Promise.race([child.exited, Bun.sleep(12_000).then(() => "timeout")])
  expect(code).toBe(0)
}, 40_000)
