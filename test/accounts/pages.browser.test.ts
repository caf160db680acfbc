import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type Browser, chromium } from "playwright-core"

// [D26] the verify-email and reset-password pages in a real browser (Debian's chromium), against a
// real server started as `bun run src/main.ts` on the embedded database, reading the mails it logs.
const CHROMIUM = "/usr/bin/chromium"
const available = existsSync(CHROMIUM)
if (!available) {
  console.warn(`pages.browser.test.ts: ${CHROMIUM} not found, browser tests of [D26] SKIPPED (apt-get install chromium)`)
}
const suite = available ? describe : describe.skip

const PASSWORD = "Tr1cky-Horse-Battery"
const NEW_PASSWORD = "Another-Str0ng-Secret"
const ROOT = resolve(import.meta.dir, "../..")

const freePort = () =>
  new Promise<number>((done, fail) => {
    const server = createServer()
    server.once("error", fail)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => done(port))
    })
  })

let server: ReturnType<typeof Bun.spawn> | undefined
let browser: Browser | undefined
let dataDir = ""
let base = ""
let log = ""

const json = async (method: string, path: string, body?: unknown, token?: string) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      accept: "application/json",
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {})
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: res.status, body: (await res.json()) as { data: Record<string, unknown> } }
}

/** the link of the newest logged mail matching `pattern` (the server logs mails without SMTP_URL) */
const linkFromLog = async (pattern: RegExp, timeoutMs = 5000): Promise<string> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const all = [...log.matchAll(new RegExp(pattern.source, "g"))]
    if (all.length > 0) return all[all.length - 1]![0]
    if (Date.now() > deadline) throw new Error(`no mail matching ${pattern} in the server log`)
    await Bun.sleep(50)
  }
}

const registerUser = async (email: string) => {
  const res = await json("POST", "/v1/auth/register", { name: "Browser User", email, password: PASSWORD, password_confirmation: PASSWORD })
  expect(res.status).toBe(201)
  return res.body.data["token"] as string
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

suite("pages in Chromium [D26]", () => {
  beforeAll(async () => {
    const port = await freePort()
    dataDir = mkdtempSync(join(tmpdir(), "vpn-api-browser-"))
    base = `http://127.0.0.1:${port}`
    const env: Record<string, string | undefined> = { ...process.env }
    for (const name of ["DATABASE_URL", "SMTP_URL", "APP_URL", "PUBLIC_URL", "ADMIN_EMAIL", "ADMIN_PASSWORD", "APP_KEY"]) delete env[name]
    server = Bun.spawn([process.execPath, "run", "src/main.ts"], {
      cwd: ROOT,
      env: { ...env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir, PUBLIC_URL: base, LOG_LEVEL: "info", GENERAL_RATE_LIMIT: "0" },
      stdout: "pipe",
      stderr: "pipe"
    })
    const collect = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder()
      const reader = stream.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return
        log += decoder.decode(value, { stream: true })
      }
    }
    void collect(server.stdout as ReadableStream<Uint8Array>)
    void collect(server.stderr as ReadableStream<Uint8Array>)
    const deadline = Date.now() + 60_000
    for (;;) {
      const up = await fetch(`${base}/v1/status`).then(
        (r) => r.ok,
        () => false
      )
      if (up) break
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`server did not start:\n${log}`)
      await Bun.sleep(200)
    }
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]
    })
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    if (server) {
      server.kill("SIGTERM")
      await server.exited
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }, 30_000)

  test("the e-mailed verification link verifies and says so, without JavaScript", async () => {
    const email = `verify-${Date.now()}@example.com`
    const token = await registerUser(email)
    const link = await linkFromLog(new RegExp(`${escapeRegExp(base)}/verify-email\\?token=[A-Za-z0-9]+`))
    const context = await browser!.newContext({ javaScriptEnabled: false })
    const page = await context.newPage()
    const response = await page.goto(link)
    expect(response!.status()).toBe(200)
    expect(await page.title()).toBe("Email verified.")
    expect(await page.getAttribute("html", "lang")).toBe("en")
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Email verified.")
    expect(await page.getByRole("status").isVisible()).toBe(true)
    await context.close()
    const me = await json("GET", "/v1/user", undefined, token)
    expect(me.body.data["email_verified_at"]).not.toBeNull()
  }, 60_000)

  test("the reset link opens a labelled form; submitting it (no JavaScript) resets the password", async () => {
    const email = `reset-${Date.now()}@example.com`
    const oldToken = await registerUser(email)
    expect((await json("POST", "/v1/auth/forgot-password", { email })).status).toBe(200)
    const link = await linkFromLog(new RegExp(`${escapeRegExp(base)}/reset-password\\?token=[A-Za-z0-9]+&email=${escapeRegExp(encodeURIComponent(email))}`))
    const context = await browser!.newContext({ javaScriptEnabled: false })
    const page = await context.newPage()
    expect((await page.goto(link))!.status()).toBe(200)
    expect(await page.getAttribute("html", "lang")).toBe("en")
    expect(await page.title()).toBe("Reset your password")
    // every field is reachable by its label, the e-mail is filled in from the link
    expect(await page.getByLabel("E-mail address").inputValue()).toBe(email)

    // a mismatched confirmation: the page says why and keeps the link usable
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD)
    await page.getByLabel("Confirm the new password").fill(`${NEW_PASSWORD}-typo`)
    await page.getByRole("button", { name: "Reset password" }).click()
    await page.waitForLoadState()
    expect(await page.getByRole("alert").textContent()).toContain("The password field confirmation does not match.")

    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD)
    await page.getByLabel("Confirm the new password").fill(NEW_PASSWORD)
    await page.getByRole("button", { name: "Reset password" }).click()
    await page.waitForLoadState()
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Password reset")
    await context.close()

    expect((await json("GET", "/v1/user", undefined, oldToken)).status).toBe(401)
    expect((await json("POST", "/v1/auth/login", { email, password: PASSWORD })).status).toBe(401)
    expect((await json("POST", "/v1/auth/login", { email, password: NEW_PASSWORD })).status).toBe(200)
  }, 60_000)

  test("a used or bogus link shows an explanation, not an error dump", async () => {
    const context = await browser!.newContext()
    const page = await context.newPage()
    const response = await page.goto(`${base}/verify-email?token=not-a-real-token`)
    expect(response!.status()).toBe(422)
    expect(await page.getByRole("alert").textContent()).toContain("invalid")
    const reset = await page.goto(`${base}/reset-password`)
    expect(reset!.status()).toBe(422)
    expect(await page.getByRole("alert").textContent()).toContain("invalid")
    await context.close()
  }, 60_000)
})
