import { describe, expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

// Issue 35: no two exported types share a name. Two files in src/ that declare an export of the
// same name are either two copies of one thing (keep one, import it) or two different things
// (give the less central one a precise name). A schema const and its type of the same name in ONE
// file count once; a re-export (`export { X } from`) is not a declaration and is not counted.
const ROOT = join(import.meta.dir, "..", "..")
const SRC = join(ROOT, "src")

/**
 * Names every module may declare by convention, always used through the module's namespace
 * (`NodeClient.make`, `Tc.make`): a constructor, not a type.
 */
const MODULE_CONVENTIONS = new Set(["make"])

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : []
  })

const DECLARATION = /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:type|interface|class|const|let|enum|function\*?|async\s+function)\s+([A-Za-z0-9_$]+)/gm

/** each exported name with the files (relative to the root) that declare it */
const declarations = (files: ReadonlyArray<string>, read: (file: string) => string) => {
  const byName = new Map<string, Set<string>>()
  for (const file of files) {
    for (const m of read(file).matchAll(DECLARATION)) {
      const name = m[1]!
      const owners = byName.get(name) ?? new Set<string>()
      owners.add(file)
      byName.set(name, owners)
    }
  }
  return byName
}

const duplicates = (byName: ReadonlyMap<string, ReadonlySet<string>>) =>
  [...byName]
    .filter(([name, files]) => files.size > 1 && !MODULE_CONVENTIONS.has(name))
    .map(([name, files]) => `${name}: ${[...files].sort().join(", ")}`)
    .sort()

describe("exported names are unique across src/ (issue 35)", () => {
  test("no two files in src/ export the same name", () => {
    const files = sourceFiles(SRC)
    expect(files.length).toBeGreaterThan(50)
    const byName = declarations(files, (file) => readFileSync(file, "utf8"))
    const relativeNames = new Map([...byName].map(([name, owners]) => [name, new Set([...owners].map((f) => relative(ROOT, f)))]))
    expect(duplicates(relativeNames)).toEqual([])
  })

  test("the check sees a duplicate across files, and allows a schema and its type in one file", () => {
    const sources: Record<string, string> = {
      "a.ts": "export const Device = Schema.Struct({})\nexport type Device = typeof Device.Type\n",
      "b.ts": "export interface Device {\n  readonly id: number\n}\nexport { Device as Other } from './a.ts'\n",
      "c.ts": "export const Plan = 1\nexport type Plan = number\nexport const make = () => 1\n",
      "d.ts": "export const make = () => 2\n"
    }
    const byName = declarations(Object.keys(sources), (file) => sources[file]!)
    expect(duplicates(byName)).toEqual(["Device: a.ts, b.ts"])
  })
})
