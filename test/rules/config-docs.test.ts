import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"

// Issue 34: the configuration tables drifted from the code. Every variable src/platform/Config.ts
// reads is documented in the README's table and in docs/operations.md, and neither documents a
// variable the code does not read.
const ROOT = join(import.meta.dir, "..", "..")
const read = (path: string) => readFileSync(join(ROOT, path), "utf8")

/** the names Config.ts reads: the first argument of its Config readers */
const codeNames = () => {
  const source = read("src/platform/Config.ts")
  const names = new Set<string>()
  for (const m of source.matchAll(/\b(?:Config\.\w+|optionalString|positiveInt|urlString|databaseUrlOf|booleanFlag|\w+Of)\(\s*"([A-Z][A-Z0-9_]+)"/g))
    names.add(m[1]!)
  return names
}

/** the names in the first column of a markdown table's rows (`NAME` or `A`, `B`) */
const tableNames = (markdown: string) => {
  const names = new Set<string>()
  for (const line of markdown.split("\n")) {
    if (!line.startsWith("| `")) continue
    const first = line.split("|")[1] ?? ""
    for (const m of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]!)
  }
  return names
}

const section = (markdown: string, heading: string) => {
  const start = markdown.indexOf(heading)
  if (start === -1) throw new Error(`no section ${heading}`)
  const next = markdown.indexOf("\n## ", start + heading.length)
  return markdown.slice(start, next === -1 ? undefined : next)
}

describe("the configuration tables follow Config.ts (issue 34)", () => {
  const code = codeNames()

  test("Config.ts reads the variables the tests know of", () => {
    for (const name of ["PORT", "DATABASE_URL", "APP_KEY", "PORTAL", "TELEGRAM_BOT_TOKEN", "CRYPTOBOT_TOKEN", "DATABASE_DIRECT_URL"]) {
      expect(code.has(name)).toBe(true)
    }
  })

  for (const [file, heading] of [
    ["README.md", "## Configuration"],
    ["docs/operations.md", "## Configuration"]
  ] as const) {
    test(`${file}: every variable the code reads is in the table, and nothing else`, () => {
      const documented = tableNames(section(read(file), heading))
      expect([...code].filter((name) => !documented.has(name)).sort()).toEqual([])
      expect([...documented].filter((name) => !code.has(name)).sort()).toEqual([])
    })
  }
})
