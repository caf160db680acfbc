import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { MAX_RPC_CALLS, MAX_RPC_STREAMS } from "../../src/vpn/NodeRpcHttp.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { watch } from "../support/node-rpc.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { makePlan, makeServer } from "./fixtures.ts"

// Issue 34: `/v1/node/rpc` checks the node token, the size, the calls and the open streams
// before the RPC server decodes anything; a call's payload is checked by the protocol's schema.
let app: TestApp
let admin: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await typedClient(app, { token: (await app.createUser({ role: "admin" })).token })
})
afterAll(() => app.dispose())

const server = async () => makeServer(app, { planIds: [(await makePlan(app)).planId] })

let ids = 0
/** one call framed as `@effect/rpc`'s HTTP protocol frames it */
const call = (tag: string, payload: unknown, extra: Record<string, unknown> = {}) => ({
  _tag: "Request",
  id: String(++ids),
  tag,
  payload,
  headers: [],
  ...extra
})

/** a raw POST of NDJSON frames (or a raw text) */
const post = async (token: string | undefined, body: ReadonlyArray<unknown> | string) => {
  const response = await app.fetch(
    new Request("http://localhost:3000/v1/node/rpc", {
      method: "POST",
      headers: { "content-type": "application/ndjson", ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
      body: typeof body === "string" ? body : `${body.map((f) => JSON.stringify(f)).join("\n")}\n`
    })
  )
  const text = await response.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, text, json: json as { success: boolean; message: string; errors?: Record<string, Array<string>> } }
}

const agentOf = async (serverId: number) => (await ok(admin.vpnAdmin.getServer({ path: { server: serverId } }))).agent

describe("POST /v1/node/rpc: checked before the RPC server (issue 34)", () => {
  test("no or a wrong token: 401 in the envelope before the calls are read, however many they are", async () => {
    const many = Array.from({ length: 5000 }, () => call("ReportApplied", { revision: 1, version: "x" }))
    for (const token of [undefined, "node_wrong_token"]) {
      const started = performance.now()
      const answer = await post(token, many)
      expect(answer.status).toBe(401)
      expect(answer.json).toEqual({ success: false, message: "Unauthenticated." })
      // the calls were never run: one refusal, not 5 000 failed calls
      expect(answer.text.length).toBeLessThan(100)
      expect(performance.now() - started).toBeLessThan(5000)
    }
    // a frame without `headers` (a 500 before): 401 without the token, 422 with it
    const { headers: _, ...bare } = call("ReportApplied", { revision: 1, version: "x" })
    expect((await post(undefined, [bare])).status).toBe(401)
    const { nodeToken } = await server()
    const answer = await post(nodeToken, [bare])
    expect(answer.status).toBe(422)
    expect(answer.json.errors).toHaveProperty("headers")
  })

  test(`at most ${MAX_RPC_CALLS} calls a request (422), at most 64 KiB (413); malformed frames 422, never 5xx`, async () => {
    const { id, nodeToken } = await server()
    const within = await post(
      nodeToken,
      Array.from({ length: MAX_RPC_CALLS }, () => call("ReportApplied", { revision: 0, version: "x" }))
    )
    expect(within.status).toBe(200)
    expect(within.text.split("\n").filter((l) => l.includes('"Exit"'))).toHaveLength(MAX_RPC_CALLS)
    const over = await post(
      nodeToken,
      Array.from({ length: MAX_RPC_CALLS + 1 }, () => call("ReportApplied", { revision: 0, version: "x" }))
    )
    expect(over.status).toBe(422)
    expect(over.json).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { calls: [`A request may carry at most ${MAX_RPC_CALLS} calls.`] }
    })
    const large = await post(nodeToken, [call("ReportApplied", { revision: 0, version: "x" }, { traceId: "t".repeat(70_000) })])
    expect(large.status).toBe(413)
    expect(large.json).toEqual({ success: false, message: "Payload too large." })

    for (const body of [
      "not json\n",
      "",
      [{ ...call("ReportApplied", { revision: 0, version: "x" }), _tag: "Interrupt" }],
      [call("Unknown", {})],
      [call("ReportApplied", { revision: 0, version: "x" }, { id: 7 })],
      [call("ReportApplied", { revision: 0, version: "x" }, { headers: "x" })],
      [call("ReportApplied", { revision: 0, version: "x" }, { headers: [["authorization", "Bearer other"]] })],
      [call("WatchPeers", { since: "1" })],
      [call("WatchPeers", {})]
    ]) {
      const answer = await post(nodeToken, body)
      expect({ body, status: answer.status }).toEqual({ body, status: 422 })
      expect(answer.json.success).toBe(false)
    }
    expect(id).toBeGreaterThan(0)
  })

  test(`at most ${MAX_RPC_STREAMS} streams per node token: the next is 429 until one closes`, async () => {
    const { nodeToken } = await server()
    const other = await server()
    const streams = Array.from({ length: MAX_RPC_STREAMS }, () => watch(app, nodeToken, null))
    try {
      for (const s of streams) await s.waitFor(() => true)
      const refused = await post(nodeToken, [call("WatchPeers", { since: null })])
      expect(refused.status).toBe(429)
      expect(refused.json).toEqual({ success: false, message: "Too Many Attempts." })
      // two streams in one request count as two
      await streams.pop()!.close()
      await Bun.sleep(50)
      expect((await post(nodeToken, [call("WatchPeers", { since: null }), call("WatchPeers", { since: null })])).status).toBe(429)
      // another node's token has its own streams; a call that opens none passes
      const elsewhere = watch(app, other.nodeToken, null)
      await elsewhere.waitFor(() => true)
      await elsewhere.close()
      expect((await post(nodeToken, [call("ReportApplied", { revision: 0, version: "x" })])).status).toBe(200)
      const again = watch(app, nodeToken, null)
      await again.waitFor(() => true)
      streams.push(again)
    } finally {
      for (const s of streams) await s.close()
    }
  })
})

describe("ReportApplied's payload (issue 34): 422, never a database error, nothing stored", () => {
  test("a fractional, negative or huge revision, a NUL or a control character in version, an empty or long version", async () => {
    const { id, nodeToken } = await server()
    const cases: Array<[unknown, unknown, string]> = [
      [1.5, "x", "revision"],
      [2 ** 70, "x", "revision"],
      [-1, "x", "revision"],
      [Number.MAX_SAFE_INTEGER + 2, "x", "revision"],
      ["1", "x", "revision"],
      [1, "a\u0000b", "version"],
      [1, "a\nb", "version"],
      [1, "", "version"],
      [1, "v".repeat(65), "version"]
    ]
    for (const [revision, version, field] of cases) {
      const answer = await post(nodeToken, [call("ReportApplied", { revision, version })])
      expect({ revision, version, status: answer.status }).toEqual({ revision, version, status: 422 })
      expect(Object.keys(answer.json.errors ?? {})).toEqual([field])
    }
    expect((await agentOf(id)).applied_revision).toBeNull()
    const fine = await post(nodeToken, [call("ReportApplied", { revision: 0, version: "vpn-api 0.1.0" })])
    expect(fine.status).toBe(200)
    expect(fine.text).toContain('"_tag":"Success"')
    expect(await agentOf(id)).toMatchObject({ applied_revision: 0, version: "vpn-api 0.1.0" })
  })
})
