import { expect, test } from "bun:test"
import { readdirSync, readFileSync } from "node:fs"
import { join, relative } from "node:path"

// Issue 35: SQL states are read in `src/platform/SqlErrors.ts` only; every other file asks its
// named predicates (`isUniqueViolation`, `isTransientConflict`, `isConnectionLoss`, ...). A
// SQLSTATE literal anywhere else in `src` (a quoted "23505", or one inside a regular expression)
// fails here, naming the file and line (a comment may still name one).
const ROOT = join(import.meta.dir, "..", "..")
const HOME = "src/platform/SqlErrors.ts"

/** PostgreSQL's SQLSTATE: a class (a digit and a character, or F0, HV, P0, XX) and three more */
const STATE = "(?:[0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}"
/** a quoted state ("23505", '40P01', `25006`), or one standing alone in a regular expression (/^(08|57P03)/) */
const LITERAL = new RegExp(`(["'\`])${STATE}\\1|(?<=[/(|^])${STATE}(?=[|)$/])`, "g")

const sources = (dir: string): Array<string> =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) return sources(path)
    return /\.tsx?$/.test(entry.name) ? [path] : []
  })

/** a whole-line comment may name a state (what the server answers to some input) */
const isComment = (line: string) => /^\s*(\/\/|\/\*|\*)/.test(line)

const literalsIn = (path: string) =>
  readFileSync(join(ROOT, path), "utf8")
    .split("\n")
    .flatMap((line, i) => (isComment(line) ? [] : [...line.matchAll(LITERAL)].map((m) => `${path}:${i + 1}: ${m[0]}`)))

test("no SQLSTATE literal in src outside platform/SqlErrors.ts", () => {
  const found = sources("src")
    .filter((path) => path !== HOME)
    .flatMap(literalsIn)
  expect(found).toEqual([])
})

test("the scan finds the states SqlErrors.ts names (the rule is not vacuous)", () => {
  const found = literalsIn(HOME).join("\n")
  for (const state of ["23505", "40001", "40P01", "25006", "57P03", "53300", "22P02"]) expect(found).toContain(state)
  expect(relative(ROOT, join(ROOT, HOME))).toBe(HOME)
})

test("the scan tells a SQLSTATE from other five-character words", () => {
  const scan = (text: string) => [...text.matchAll(LITERAL)].map((m) => m[0])
  expect(scan(`code === "23505"`)).toEqual([`"23505"`])
  expect(scan(`/^(08|57P03|25006)/.test(code)`)).toEqual(["57P03", "25006"])
  expect(scan(`["EPIPE", "PATCH", "SAVE5", "OTHER"], 10000, "123456"`)).toEqual([])
})
