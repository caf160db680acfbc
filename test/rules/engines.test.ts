import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"

// Issue 34: `npm install` warned that a package needs Node.js 22 while the README said 20+. Every
// package of the lockfile accepts the Node.js version the README's set-up names.
const root = join(import.meta.dir, "../..")

test("every locked package's engines.node accepts the README's Node.js version", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8")
  const named = /## Set-up \(a machine with Node\.js (\d+)\.(\d+) or newer/.exec(readme)
  expect(named).not.toBeNull()
  const version = `${named![1]}.${named![2]}.0`
  const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
    packages: Record<string, { engines?: { node?: string }; optional?: boolean }>
  }
  const refused = Object.entries(lock.packages)
    .filter(([, p]) => typeof p.engines?.node === "string" && !Bun.semver.satisfies(version, p.engines.node))
    .map(([name, p]) => `${name} needs node ${p.engines!.node}`)
  expect(refused).toEqual([])
})
