/**
 * What the typed client would add to the portal (issue 36; docs/decisions.md, "The portal and the
 * console"): the gzipped size of `HttpApiClient.make(Api)` with `FetchHttpClient`, bundled for the
 * browser as the portal's bundles are (`BUILD_OPTIONS`), once as it is and once with the common
 * password list of [D13] (which the contract's password schema loads) left out. Prints the figures.
 * `bun run scripts/portal-client-size.ts`
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import type { BunPlugin } from "bun"
import { BUILD_OPTIONS, buildPortal } from "../src/http/Portal.ts"

const ROOT = resolve(import.meta.dir, "..")
const dir = join(ROOT, "node_modules/.cache/portal-client-size")
mkdirSync(dir, { recursive: true })
const entry = join(dir, "client.ts")
writeFileSync(
  entry,
  `import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as Effect from "effect/Effect"
import { Api } from ${JSON.stringify(join(ROOT, "src/Api.ts"))}
export const client = HttpApiClient.make(Api, { baseUrl: "" }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)
`
)

const withoutPasswordList: BunPlugin = {
  name: "without-the-common-password-list",
  setup(build) {
    build.onResolve({ filter: /^@zxcvbn-ts\/language-common$/ }, () => ({ path: "list", namespace: "empty" }))
    build.onLoad({ filter: /.*/, namespace: "empty" }, () => ({ contents: `export const dictionary = { "passwords-common": [] }`, loader: "js" }))
  }
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`
const measure = async (plugins: Array<BunPlugin>) => {
  const result = await Bun.build({ ...BUILD_OPTIONS, splitting: false, entrypoints: [entry], plugins })
  if (!result.success) throw new AggregateError(result.logs, "the client's bundle failed")
  let raw = 0
  let gzip = 0
  for (const output of result.outputs) {
    const bytes = new Uint8Array(await output.arrayBuffer())
    raw += bytes.length
    gzip += Bun.gzipSync(bytes).length
  }
  return { raw, gzip }
}

try {
  const whole = await measure([])
  const lean = await measure([withoutPasswordList])
  const portal = await buildPortal()
  const gz = new Map(portal.files.map((f) => [f.path, Bun.gzipSync(f.bytes as Uint8Array<ArrayBuffer>).length]))
  const refs = [...portal.portal.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!).filter((p) => gz.has(p))
  const firstPage = refs.reduce((sum, p) => sum + gz.get(p)!, Bun.gzipSync(new TextEncoder().encode(portal.portal)).length)
  console.log(`HttpApiClient.make(Api):                      ${kb(whole.raw).padStart(9)} raw ${kb(whole.gzip).padStart(9)} gzip`)
  console.log(`  without the common password list of [D13]:  ${kb(lean.raw).padStart(9)} raw ${kb(lean.gzip).padStart(9)} gzip`)
  console.log(`the portal's first page today:                              ${kb(firstPage).padStart(9)} gzip (budget 250.0 KB)`)
  console.log(`  with the client in it:                                    ${kb(firstPage + whole.gzip).padStart(9)} gzip`)
  console.log(`  with the client in it, without the list:                  ${kb(firstPage + lean.gzip).padStart(9)} gzip`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
