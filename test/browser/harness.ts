import { expect } from "bun:test"
import AxeBuilder from "@axe-core/playwright"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { freePort } from "../instances/harness.ts"

/** What the browser tests share: the checkout's root, Chromium, the skip rule and a server of this checkout. */
export const ROOT = resolve(import.meta.dir, "../..")
export const SHOTS = join(ROOT, "test-results/portal")
export const CHROMIUM = "/usr/bin/chromium"

/** why the browser tests are skipped here, or undefined when they run (CPU-heavy: `.ci/run` sets PORTAL_BROWSER_TEST=1) */
export const browserSkipReason =
  process.env["PORTAL_BROWSER_TEST"] !== "1"
    ? "PORTAL_BROWSER_TEST is not 1 (CPU-heavy; `.ci/run` runs it as a step of its own)"
    : !existsSync(CHROMIUM)
      ? `${CHROMIUM} is missing (apt-get install -y chromium)`
      : undefined

const run = async (args: Array<string>, env: Record<string, string>) => {
  const child = Bun.spawn([process.execPath, "run", "src/main.ts", ...args], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" })
  const out = await new Response(child.stdout).text()
  await child.exited
  return out
}

export interface PortalServer {
  readonly url: string
  readonly proc: ReturnType<typeof Bun.spawn>
  /** what the server printed so far */
  readonly output: { text: string }
  readonly dir: string
}

/** A server of this checkout on a free port, its own DATA_DIR (seeded with the demo when asked), its output collected. */
export const startPortalServer = async (extraEnv: Record<string, string>, options: { readonly seed: boolean }): Promise<PortalServer> => {
  const dir = mkdtempSync(join(tmpdir(), "vpn-browser-"))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const env = {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: process.env["HOME"] ?? "/tmp",
    DATA_DIR: dir,
    PORT: String(port),
    HOST: "127.0.0.1",
    PUBLIC_URL: url,
    GENERAL_RATE_LIMIT: "0",
    LOG_LEVEL: "info",
    ...extraEnv
  }
  if (options.seed) await run(["seed-demo"], { ...env, LOG_LEVEL: "error" })
  const proc = Bun.spawn([process.execPath, "run", "src/main.ts"], { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" })
  const output = { text: "" }
  const decoder = new TextDecoder()
  for (const stream of [proc.stdout, proc.stderr] as Array<ReadableStream<Uint8Array>>) {
    void (async () => {
      const reader = stream.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        output.text += decoder.decode(value, { stream: true })
      }
    })()
  }
  for (let i = 0; i < 240; i++) {
    const up = await fetch(`${url}/v1/status`).then(
      (r) => r.ok,
      () => false
    )
    if (up) break
    await Bun.sleep(250)
  }
  // the first page request bundles web/ (under bun run): done here, outside the page timeouts
  expect((await fetch(`${url}/`)).status).toBe(200)
  return { url, proc, output, dir }
}

/** A browser context of the tests: CSP violations reported to `violations`. */
export const newTestContext = async (
  browser: Browser,
  violations: Array<string>,
  options: { locale?: string; viewport?: { width: number; height: number } } = {}
): Promise<BrowserContext> => {
  const context = await browser.newContext({
    locale: options.locale ?? "en-US",
    viewport: options.viewport ?? { width: 1280, height: 900 },
    acceptDownloads: true
  })
  context.on("console", (message) => {
    if (/Content.Security.Policy|Refused to (load|apply|execute)/i.test(message.text())) violations.push(message.text())
  })
  return context
}

/** A screenshot of the page and axe's check: no serious or critical violation. */
export const check = async (page: Page, name: string) => {
  try {
    await page.waitForLoadState("networkidle", { timeout: 20_000 })
  } catch (e) {
    await page.screenshot({ path: join(SHOTS, `${name}-not-idle.png`), fullPage: true }).catch(() => undefined)
    throw new Error(`${name}: ${page.url()} not idle in 20 s (its screenshot: ${name}-not-idle.png): ${String(e)}`)
  }
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
  const result = await new AxeBuilder({ page }).analyze()
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
  expect(bad.map((v) => `${name}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`)).toEqual([])
}

/** The last link to `path` a mail of the server carried, from its log (the mails, without SMTP_URL). */
export const mailedLink = async (server: PortalServer, path: string) => {
  for (let i = 0; i < 80; i++) {
    const links = [...server.output.text.matchAll(new RegExp(`${server.url.replace(/[.]/g, "\\.")}${path}\\?token=[A-Za-z0-9._~%-]+`, "g"))]
    if (links.length > 0) return links[links.length - 1]![0]
    await Bun.sleep(250)
  }
  throw new Error(`no ${path} link in the log:\n${server.output.text.slice(-3000)}`)
}
