import { afterAll, describe, expect, test } from "bun:test"
import { newAppKey, type RunningServer, startServer } from "../instances/harness.ts"

/*
 * [D118]: the portal at `/` and the console at `/admin/`, served by the real server (`bun run
 * src/main.ts`, which bundles `web/` at the first page request): the SPA fallback, the headers of
 * the HTML and of the content-hashed assets, the server's own paths untouched, `PORTAL=false`.
 */

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'"

const servers: Array<RunningServer> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

const start = async (env: Record<string, string> = {}) => {
  const server = await startServer({ databaseUrl: "", appKey: newAppKey(), env: { LOG_LEVEL: "error", ...env } })
  servers.push(server)
  return server
}

const expectAppHeaders = (res: Response) => {
  expect(res.status).toBe(200)
  expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8")
  expect(res.headers.get("content-security-policy")).toBe(CSP)
  expect(res.headers.get("cache-control")).toBe("no-store")
  expect(res.headers.get("x-content-type-options")).toBe("nosniff")
  expect(res.headers.get("referrer-policy")).toBe("no-referrer")
}

describe("the portal and the console ([D118])", () => {
  let server: RunningServer
  let portalHtml = ""

  test("GET / answers the portal's HTML with the CSP, no-store, nosniff and no referrer", async () => {
    server = await start()
    const res = await fetch(`${server.base}/`)
    expectAppHeaders(res)
    portalHtml = await res.text()
    expect(portalHtml).toContain('<div id="root"></div>')
    // no inline script: every script is a file of this origin
    expect(portalHtml).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
    expect(portalHtml).not.toMatch(/<style/)
  }, 120_000)

  test("any other GET or HEAD outside the server's paths answers the portal (its own not-found page)", async () => {
    for (const path of ["/plans", "/devices/12", "/no/such/page", "/sign-in?next=%2Fusage"]) {
      const res = await fetch(`${server.base}${path}`)
      expectAppHeaders(res)
      expect(await res.text()).toBe(portalHtml)
    }
    const head = await fetch(`${server.base}/invoices`, { method: "HEAD" })
    expectAppHeaders(head)
  })

  test("/admin/ and its paths answer the console", async () => {
    for (const path of ["/admin", "/admin/", "/admin/users/3"]) {
      const res = await fetch(`${server.base}${path}`)
      expectAppHeaders(res)
      const html = await res.text()
      expect(html).toContain("<title>VPN console</title>")
    }
  })

  test("the assets the pages name are content-hashed and cached for a year", async () => {
    const refs = [...portalHtml.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!)
    expect(refs.some((r) => r.endsWith(".js"))).toBe(true)
    expect(refs.some((r) => r.endsWith(".css"))).toBe(true)
    for (const ref of refs) {
      expect(ref).toMatch(/-[a-z0-9]{8}\.(js|css)$/)
      const res = await fetch(`${server.base}${ref}`)
      expect(res.status).toBe(200)
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(res.headers.get("x-content-type-options")).toBe("nosniff")
      expect(res.headers.get("content-type")).toBe(ref.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8")
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0)
    }
  })

  test("the API, its documents and the pages of [D26] stay the server's", async () => {
    const unknown = await fetch(`${server.base}/v1/no-such-route`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ success: false, message: "Resource not found." })
    const status = await fetch(`${server.base}/v1/status`)
    expect(status.status).toBe(200)
    const docs = await fetch(`${server.base}/docs`)
    expect(docs.headers.get("content-security-policy")).not.toBe(CSP)
    const verify = await fetch(`${server.base}/verify-email?token=nope`)
    expect(verify.headers.get("content-security-policy")).not.toBe(CSP)
    const pay = await fetch(`${server.base}/pay/00000000-0000-4000-8000-000000000000`)
    expect(pay.headers.get("content-security-policy")).not.toBe(CSP)
    // a write to a page path is not a page: the API's answer
    const post = await fetch(`${server.base}/plans`, { method: "POST" })
    expect(post.status).toBe(404)
    expect(post.headers.get("content-type")).toContain("application/json")
  })
})

describe("PORTAL=false ([D118]): the API only", () => {
  test("/ and /admin/ are the envelope's 404", async () => {
    const server = await start({ PORTAL: "false" })
    for (const path of ["/", "/admin/", "/plans"]) {
      const res = await fetch(`${server.base}${path}`)
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ success: false, message: "Resource not found." })
    }
  }, 120_000)
})
