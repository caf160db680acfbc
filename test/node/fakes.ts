import { createServer, type Server } from "node:net"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { NodeClient } from "../../src/node/NodeClient.ts"
import { Wg, WgFailed } from "../../src/node/Wg.ts"
import type { TestApp } from "../support/app.ts"

/** A WireGuard interface in memory, driven through the same `wg` arguments the agent uses. */
export const fakeInterface = (options: { readonly ownKey?: string; readonly port?: number } = {}) => {
  const peers = new Map<string, { allowedIps: string; rx: number; tx: number }>()
  const calls: Array<ReadonlyArray<string>> = []
  let broken = false
  const layer = Layer.succeed(Wg, {
    dump: () =>
      broken
        ? Effect.fail(new WgFailed({ command: "wg show", message: "Unable to access interface: No such device" }))
        : Effect.succeed(
            [
              ["PRIVATE=", options.ownKey ?? "OWN=", String(options.port ?? 51820), "off"].join("\t"),
              ...[...peers].map(([key, p]) => [key, "(none)", "(none)", p.allowedIps || "(none)", "0", p.rx, p.tx, "off"].join("\t"))
            ].join("\n") + "\n"
          ),
    set: (_iface, args) =>
      Effect.suspend(() => {
        calls.push(args)
        if (broken) return Effect.fail(new WgFailed({ command: "wg set", message: "Unable to modify interface" }))
        const [word, key, what, value] = args
        if (word !== "peer" || key === undefined) return Effect.die(new Error(`unexpected wg set ${args.join(" ")}`))
        if (what === "remove") peers.delete(key)
        else if (what === "allowed-ips" && value !== undefined) {
          const before = peers.get(key)
          peers.set(key, { allowedIps: value, rx: before?.rx ?? 0, tx: before?.tx ?? 0 })
        } else return Effect.die(new Error(`unexpected wg set ${args.join(" ")}`))
        return Effect.void
      })
  })
  return {
    layer,
    peers,
    calls,
    /** traffic through a peer: its cumulative counters grow */
    traffic: (key: string, rx: number, tx: number) => {
      const p = peers.get(key)
      if (p) peers.set(key, { ...p, rx: p.rx + rx, tx: p.tx + tx })
    },
    setBroken: (b: boolean) => {
      broken = b
    }
  }
}

export type FetchLike = (request: Request) => Promise<Response>

/** The node client over a fetch function (the test app, or a scripted one). */
export const nodeClientLayer = (token: string, fetchImpl: FetchLike) =>
  NodeClient.layer({ apiUrl: "http://api.test", token: Redacted.make(token) }).pipe(
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(
      Layer.succeed(
        FetchHttpClient.Fetch,
        Object.assign((input: RequestInfo | URL, init?: RequestInit) => fetchImpl(new Request(input, init)), {
          preconnect: fetch.preconnect
        })
      )
    )
  )

/** Requests served by the in-process test app; `down()` makes the API unreachable. */
export const appFetch = (app: TestApp) => {
  let down = false
  const seen: Array<{ method: string; path: string; key: string | null; body: string }> = []
  const fetchImpl: FetchLike = async (request) => {
    if (down) throw new TypeError("fetch failed: connection refused")
    const url = new URL(request.url)
    const body = await request.text()
    seen.push({ method: request.method, path: url.pathname + url.search, key: request.headers.get("idempotency-key"), body })
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    const res = await app.request(request.method, url.pathname + url.search, { ...(body.length > 0 ? { raw: body } : {}), headers })
    return new Response(res.text, { status: res.status, headers: res.headers })
  }
  return {
    fetchImpl,
    seen,
    setDown: (d: boolean) => {
      down = d
    }
  }
}

/**
 * A stand-in for OpenVPN's management interface (we cannot run OpenVPN here; the tunnel test
 * does): the banner, then `kill <cn>` answered as OpenVPN answers it, recording each with its time.
 */
export const fakeManagement = async (connected: Set<string>) => {
  const kills: Array<{ name: string; at: number }> = []
  const server: Server = createServer((socket) => {
    socket.write(">INFO:OpenVPN Management Interface Version 5 -- type 'help' for more info\r\n")
    let buffer = ""
    socket.on("data", (chunk) => {
      buffer += chunk.toString()
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end).trim()
        buffer = buffer.slice(end + 1)
        const kill = /^kill (\S+)$/.exec(line)
        if (kill !== null) {
          kills.push({ name: kill[1]!, at: performance.now() })
          socket.write(
            connected.delete(kill[1]!) ? `SUCCESS: common name '${kill[1]}' found, 1 client(s) killed\r\n` : `ERROR: common name '${kill[1]}' not found\r\n`
          )
        } else if (line === "quit") socket.end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return { kills, target: `127.0.0.1:${port}`, close: () => server.close() }
}
