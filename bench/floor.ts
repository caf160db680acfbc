/**
 * `bun run bench/floor.ts`: what one request costs before any code of ours runs (issue 40). Each
 * server answers `GET /v1/status` with a constant: raw `Bun.serve`; the same in an Effect fiber;
 * `@effect/platform-bun`'s server with a constant `HttpServerResponse`; the same behind an
 * `HttpRouter`; a bare `HttpApi` endpoint with a response schema. wrk loads each (32 connections)
 * and the server's CPU per request is read from `/proc`. Knobs: FLOOR_SECONDS (5), FLOOR_ROUNDS (3).
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpMiddleware, HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { Effect, Layer, Runtime, Schema } from "effect"
import { cpuTicks, freePort, TICK_US } from "./lib/proc.ts"
import { ensureWrk, wrk } from "./lib/wrk.ts"

const MODES = ["raw", "fiber", "platform", "router", "httpapi"] as const
type Mode = (typeof MODES)[number]
const body = JSON.stringify({ success: true, message: "OK", data: { database: "ok" } })
const json = { "content-type": "application/json" }

const serve = (mode: Mode, port: number) => {
  const hostname = "127.0.0.1"
  const quiet = HttpMiddleware.withTracerDisabledWhen(() => true)
  switch (mode) {
    case "raw":
      return void Bun.serve({ port, hostname, fetch: () => new Response(body, { headers: json }) })
    case "fiber": {
      const fork = Runtime.runFork(Runtime.defaultRuntime)
      return void Bun.serve({
        port,
        hostname,
        fetch: () => new Promise<Response>((resolve) => void fork(Effect.sync(() => resolve(new Response(body, { headers: json })))))
      })
    }
    case "platform":
    case "router": {
      const constant = Effect.succeed(HttpServerResponse.text(body, { contentType: "application/json" }))
      const app = mode === "platform" ? constant : HttpRouter.empty.pipe(HttpRouter.get("/v1/status", constant))
      return HttpServer.serve(app).pipe(quiet, Layer.provide(BunHttpServer.layer({ port, hostname })), Layer.launch, BunRuntime.runMain)
    }
    case "httpapi": {
      const Status = Schema.Struct({ success: Schema.Boolean, message: Schema.String, data: Schema.Struct({ database: Schema.Literal("ok") }) })
      class Floor extends HttpApiGroup.make("floor").add(HttpApiEndpoint.get("status", "/v1/status").addSuccess(Status)) {}
      class FloorApi extends HttpApi.make("floor").add(Floor) {}
      const handlers = HttpApiBuilder.group(FloorApi, "floor", (h) =>
        h.handle("status", () => Effect.succeed({ success: true, message: "OK", data: { database: "ok" as const } }))
      )
      return HttpApiBuilder.serve().pipe(
        quiet,
        Layer.provide(HttpApiBuilder.api(FloorApi).pipe(Layer.provide(handlers))),
        Layer.provide(BunHttpServer.layer({ port, hostname })),
        Layer.launch,
        BunRuntime.runMain
      )
    }
  }
}

const child = process.env["FLOOR_MODE"] as Mode | undefined
if (child !== undefined) {
  serve(child, Number(process.env["PORT"]))
} else {
  const seconds = Number(process.env["FLOOR_SECONDS"] ?? 5)
  const rounds = Number(process.env["FLOOR_ROUNDS"] ?? 3)
  ensureWrk()
  const results = new Map<Mode, Array<number>>(MODES.map((m) => [m, []]))
  for (let round = 1; round <= rounds; round++) {
    for (const mode of MODES) {
      const port = freePort()
      const proc = Bun.spawn([process.execPath, import.meta.path], {
        env: { ...process.env, FLOOR_MODE: mode, PORT: String(port) },
        stdout: "ignore",
        stderr: "inherit"
      })
      const url = `http://127.0.0.1:${port}/v1/status`
      for (
        let i = 0;
        i < 100 &&
        !(await fetch(url)
          .then((r) => r.ok)
          .catch(() => false));
        i++
      )
        await Bun.sleep(50)
      await wrk({ url, seconds: 2, connections: 32 })
      const before = cpuTicks(proc.pid)
      const measured = await wrk({ url, seconds, connections: 32 })
      const cpuUs = ((cpuTicks(proc.pid) - before) * TICK_US) / measured.requests
      results.get(mode)!.push(cpuUs)
      console.log(`round ${round} ${mode.padEnd(9)} ${measured.rps.toFixed(0).padStart(7)} req/s ${cpuUs.toFixed(1).padStart(6)} µs CPU/request`)
      proc.kill()
      await proc.exited
    }
  }
  console.log("\n| server | CPU µs per request (median) |\n|---|---:|")
  for (const [mode, xs] of results) console.log(`| ${mode} | ${[...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!.toFixed(1)} |`)
}
