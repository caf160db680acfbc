/**
 * Prints the gzipped size of every bundle of the portal and the console ([D118], issue 36) and
 * checks the budget: the portal's first page (its HTML and every script, stylesheet and preload
 * it names) at most 250 KB gzipped. Run by `npm run build`; exits 1 over the budget.
 */
import { buildPortal } from "../src/http/Portal.ts"

const BUDGET = 250 * 1024
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`

const bundle = await buildPortal()
const gz = new Map(bundle.files.map((f) => [f.path, Bun.gzipSync(f.bytes as Uint8Array<ArrayBuffer>).length]))
console.log("bundle                                   raw        gzip")
for (const file of bundle.files) {
  console.log(`${file.path.padEnd(40)} ${kb(file.bytes.length).padStart(10)} ${kb(gz.get(file.path)!).padStart(10)}`)
}
const firstPage = (html: string) => {
  const refs = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!).filter((p) => gz.has(p))
  return refs.reduce((sum, p) => sum + gz.get(p)!, Bun.gzipSync(new TextEncoder().encode(html)).length)
}
const portal = firstPage(bundle.portal)
const console_ = firstPage(bundle.console)
console.log(`portal first page: ${kb(portal)} gzipped (budget ${kb(BUDGET)}); console first page: ${kb(console_)} gzipped`)
if (portal > BUDGET) {
  console.error(`the portal's first page is over its budget: ${kb(portal)} > ${kb(BUDGET)}`)
  process.exit(1)
}
