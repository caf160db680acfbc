import { expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

// Issue 35: the room suites speak through the typed client (`HttpApiClient` from `Api`), so that a
// change to the contract fails them at compile time. The calls that test the wire itself (error
// envelopes, headers, cookies, raw bodies, files, signed webhooks) stay untyped; the typed calls
// outnumber them. Typed calls are counted in their one-line form `<client>.<group>.<endpoint>(`.
const ROOT = join(import.meta.dir, "..", "..")
const ROOMS = ["accounts", "audit", "billing", "catalog", "events", "node", "outbox", "support-room", "vpn", "webhooks"]

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return files(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

const sourceFiles = (dir: string): Array<string> => files(dir).filter((f) => !f.endsWith(".d.ts"))

const declared = (pattern: RegExp) => [
  ...new Set(sourceFiles(join(ROOT, "src")).flatMap((f) => [...readFileSync(f, "utf8").matchAll(pattern)].map((m) => m[1]!)))
]
/** the groups and the endpoints of the contract, as `HttpApiGroup.make` and `HttpApiEndpoint.<method>` name them */
const groups = declared(/HttpApiGroup\.make\("([A-Za-z]+)"/g)
const endpoints = declared(/HttpApiEndpoint\.(?:get|post|put|patch|del)\("([A-Za-z]+)"/g)

/** untyped: the test app's request helpers; typed: `<client>.<group>.<endpoint>(` of a declared endpoint */
export const countCalls = (text: string, groupNames: ReadonlyArray<string>, endpointNames: ReadonlyArray<string>) => ({
  untyped: (text.match(/\bapp\.(get|post|put|patch|del|delete|request)\(/g) ?? []).length,
  typed: (text.match(new RegExp(`\\b[A-Za-z_][A-Za-z0-9_]*\\.(?:${groupNames.join("|")})\\.(?:${endpointNames.join("|")})\\(`, "g")) ?? []).length
})

test("the counter tells a typed call from an untyped one, and from an array method", () => {
  const sample = [
    `await app.get("/v1/services/current", { token })`,
    `await ok(me.services.current())`,
    `await app.post("/v1/orders", {})`,
    `await app.del("/v1/devices/1", {})`,
    `family.metrics.filter((m) => m)`
  ].join("\n")
  expect(countCalls(sample, ["services", "metrics"], ["current", "metrics"])).toEqual({ untyped: 3, typed: 1 })
})

test("the room suites make more typed calls than untyped ones (issue 35)", () => {
  expect(groups.length).toBeGreaterThan(20)
  expect(endpoints.length).toBeGreaterThan(100)
  const total = { untyped: 0, typed: 0 }
  const perRoom: Record<string, { untyped: number; typed: number }> = {}
  for (const room of ROOMS) {
    const counts = { untyped: 0, typed: 0 }
    for (const file of files(join(ROOT, "test", room))) {
      const c = countCalls(readFileSync(file, "utf8"), groups, endpoints)
      counts.untyped += c.untyped
      counts.typed += c.typed
    }
    perRoom[room] = counts
    total.untyped += counts.untyped
    total.typed += counts.typed
  }
  console.log(`typed ${total.typed}, untyped ${total.untyped}:`, JSON.stringify(perRoom))
  expect(total.typed).toBeGreaterThan(total.untyped)
})
