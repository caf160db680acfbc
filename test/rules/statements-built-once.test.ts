import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"
import ts from "typescript"

// Issue 35, step 3: every statement built once. A `SqlSchema.findAll / findOne / single / void`
// builds its schemas and its statement builder when it is called, so it belongs to the service's
// construction (`const list = SqlSchema.findAll({...})` in the `Effect.gen` body that builds the
// service), called per request as `list(request)`. Built inside a per-call function it is rebuilt
// on every call. The rule: no function other than a generator (the construction's `Effect.gen`
// body) may enclose a `SqlSchema.` call, except the few builders listed below, which run once at
// construction.
const ROOT = join(import.meta.dir, "..", "..")
const SRC = join(ROOT, "src")

/** functions that run only at a service's construction, building statements for it */
const BUILDERS = new Set([
  // the same three user reads for two column lists, built twice at construction
  "src/services/ServiceRows.ts userReads",
  // the gateway's layer, built once from its settings
  "src/billing/gateways/CryptoBot.ts make",
  // the delivery's layer, built once from its bot
  "src/outbox/TelegramDelivery.ts makeTelegramDelivery",
  // the grace statements of [D124], built once by ServiceRows' construction
  "src/services/GraceRows.ts makeGraceRows"
])

/** per-call statements not yet moved (file -> count); this list only shrinks */
const LEFT: Record<string, number> = {}

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return files(path)
    return entry.name.endsWith(".ts") ? [path] : []
  })

const isSqlSchemaCall = (node: ts.Node): node is ts.CallExpression =>
  ts.isCallExpression(node) &&
  ts.isPropertyAccessExpression(node.expression) &&
  ts.isIdentifier(node.expression.expression) &&
  node.expression.expression.text === "SqlSchema"

/** the name a function is bound to (`const name = (...) =>`, `name: (...) =>`, `function name`) */
const nameOf = (fn: ts.FunctionLikeDeclaration): string | undefined => {
  if (fn.name && ts.isIdentifier(fn.name)) return fn.name.text
  const parent = fn.parent
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && ts.isIdentifier(parent.name)) return parent.name.text
  return undefined
}

/** a generator handed to `Effect.gen` (a construction's body, or a per-call body inside a function) */
const isGenBody = (fn: ts.FunctionLikeDeclaration) =>
  fn.asteriskToken !== undefined && ts.isCallExpression(fn.parent) && fn.parent.expression.getText() === "Effect.gen"

/** why this call is built per call, or undefined when it is built once */
const perCall = (call: ts.CallExpression, file: string): string | undefined => {
  if (ts.isCallExpression(call.parent) && call.parent.expression === call) return "built and invoked at once"
  for (let node: ts.Node = call.parent; !ts.isSourceFile(node); node = node.parent) {
    if (!ts.isFunctionLike(node) || !("body" in node)) continue
    const fn = node as ts.FunctionLikeDeclaration
    if (isGenBody(fn)) continue
    const name = nameOf(fn)
    if (name !== undefined && BUILDERS.has(`${file} ${name}`)) continue
    return `inside the function ${name ?? "(anonymous)"}`
  }
  return undefined
}

const findings = () => {
  const found: Array<{ file: string; line: number; why: string }> = []
  for (const path of files(SRC)) {
    const text = readFileSync(path, "utf8")
    if (!text.includes("SqlSchema.")) continue
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true)
    const visit = (node: ts.Node) => {
      if (isSqlSchemaCall(node)) {
        const file = relative(ROOT, path)
        const why = perCall(node, file)
        if (why !== undefined) found.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, why })
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found
}

describe("every SqlSchema statement is built once, at the service's construction (issue 35)", () => {
  const found = findings()

  test("no statement is built per call, beyond the known leftovers", () => {
    const byFile: Record<string, number> = {}
    for (const f of found) byFile[f.file] = (byFile[f.file] ?? 0) + 1
    const over = found.filter((f) => (byFile[f.file] ?? 0) > (LEFT[f.file] ?? 0)).map((f) => `${f.file}:${f.line} ${f.why}`)
    expect(over).toEqual([])
  })

  test("the leftover list only names what is still left", () => {
    const byFile: Record<string, number> = {}
    for (const f of found) byFile[f.file] = (byFile[f.file] ?? 0) + 1
    expect(byFile).toEqual(LEFT)
  })

  test("the rule sees a statement built per call", () => {
    const source = ts.createSourceFile(
      "x.ts",
      [
        "const s = Effect.gen(function* () {",
        "  const list = (id: number) => SqlSchema.findAll({ Request: X, Result: Y, execute: f })(id)",
        "  const ok = SqlSchema.findAll({ Request: X, Result: Y, execute: f })",
        "  const get = (id: number) => Effect.gen(function* () { const one = SqlSchema.findOne({ Request: X, Result: Y, execute: f }) })",
        "  const fn = Effect.fn(function* (id: number) { const one = SqlSchema.findOne({ Request: X, Result: Y, execute: f }) })",
        "})"
      ].join("\n"),
      ts.ScriptTarget.Latest,
      true
    )
    const calls: Array<ts.CallExpression> = []
    const visit = (node: ts.Node) => {
      if (isSqlSchemaCall(node)) calls.push(node)
      ts.forEachChild(node, visit)
    }
    visit(source)
    expect(calls.map((call) => perCall(call, "x.ts"))).toEqual([
      "built and invoked at once",
      undefined,
      "inside the function get",
      "inside the function (anonymous)"
    ])
  })
})
