import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { LogLevel } from "effect"
import { unzipSync, strFromU8 } from "fflate"
import jsQR from "jsqr"
import { PNG } from "pngjs"
import { parse as parseYaml } from "yaml"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, type TypedClient, typedClient } from "../support/typed.ts"
import { DAY, GIB, makePlan, makeServer, makeService } from "./fixtures.ts"

// [D122] One link per device: `GET /s/<token>` in every format, its headers, ETag and 304, the
// access rules of the per-server download, rotation and revocation, the per-link limit and the
// fetch log (the user's and the admin's).
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
let staff: TypedClient
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
  staff = await typedClient(app, { token: admin.token })
})
afterAll(() => app.dispose())

const LINK = /^http:\/\/localhost:3000\/s\/([A-Za-z0-9_-]{32,})$/

let seq = 0
/** a user with an active service on a plan granting two WireGuard servers and an OpenVPN one, and a device */
const member = async (options: { readonly limitGb?: number; readonly status?: string; readonly names?: readonly [string, string] } = {}) => {
  const user = await app.createUser()
  const plan = await makePlan(app, options.limitGb ?? 100)
  const serviceId = await makeService(app, user.id, plan, options.status ? { status: options.status } : {})
  const n = ++seq
  const wg1 = await makeServer(app, { planIds: [plan.planId], name: options.names?.[0] ?? `Amsterdam ${n}`, ip: "198.51.100.10" })
  const wg2 = await makeServer(app, { planIds: [plan.planId], name: options.names?.[1] ?? `Zürich ${n}/α`, ip: "198.51.100.20", subnet: "10.77.0.0/16" })
  const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId], name: `Paris ${n}`, ip: "198.51.100.30" })
  const me = await typedClient(app, { token: user.token })
  const device = (await ok(me.vpn.createDevice({ payload: { name: "My Phone", platform: "ios" } }))).id
  const listed = await ok(me.vpn.listDevices())
  const url = listed.find((d) => d.id === device)!.subscription_url
  return { user, me, plan, serviceId, wg1, wg2, ovpn, device, url, path: new URL(url).pathname }
}

const fetchLink = (path: string, headers: Record<string, string> = {}) => app.get(path, { headers: { accept: "*/*", ...headers } })
/** the raw answer (binary bodies) */
const fetchRaw = (path: string, headers: Record<string, string> = {}) => app.fetch(new Request(`http://localhost:3000${path}`, { headers }))

const USERINFO = /^upload=(\d+); download=(\d+); total=(\d+); expire=(\d+)$/

const expectLinkHeaders = (headers: Headers) => {
  expect(headers.get("subscription-userinfo")).toMatch(USERINFO)
  expect(headers.get("profile-update-interval")).toBe("12")
  expect(headers.get("cache-control")).toBe("private, no-cache")
  expect(headers.get("content-disposition")).toMatch(/filename="[^"]+"/)
  expect(headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{16,}"$/)
}

describe("the link of each device [D122]", () => {
  test("GET /v1/devices and /v1/devices/{device} show the same subscription_url; only a hash of its token is stored", async () => {
    const m = await member()
    expect(m.url).toMatch(LINK)
    const token = LINK.exec(m.url)![1]!
    expect(token.length).toBeGreaterThanOrEqual(32)
    const detail = await app.get(`/v1/devices/${m.device}`, { token: m.user.token })
    expect(detail.status).toBe(200)
    expect(detail.body.data.subscription_url).toBe(m.url)
    const list = await app.get("/v1/devices", { token: m.user.token })
    expect(list.body.data[0].subscription_url).toBe(m.url)
    // answers that carry a credential are never cached ([D11])
    expect(detail.headers.get("cache-control")).toBe("no-store")
    expect(list.headers.get("cache-control")).toBe("no-store")
    // the token is in no column of the device; its SHA-256 is
    const [row] = await app.sql<{ whole: string; hash: string }>`
      select row_to_json(d)::text as whole, subscription_hash as hash from vpn_devices d where id = ${m.device}`
    expect(row!.whole).not.toContain(token)
    expect(row!.hash).toBe(new Bun.CryptoHasher("sha256").update(token).digest("hex"))
    // two devices, two links
    // answered 201 (else `ok` throws)
    await ok(m.me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
    const urls = (await ok(m.me.vpn.listDevices())).map((d) => d.subscription_url)
    expect(new Set(urls).size).toBe(2)
  })

  test("concurrent first showings of a device agree on one link", async () => {
    const m = await member()
    await app.sql`update vpn_devices set subscription_seed = null, subscription_hash = null where id = ${m.device}`
    const answers = await Promise.all(Array.from({ length: 8 }, () => ok(m.me.vpn.getDevice({ path: { device: m.device } }))))
    const urls = new Set(answers.map((a) => a.subscription_url))
    expect(urls.size).toBe(1)
    expect((await fetchLink(new URL([...urls][0]!).pathname)).status).toBe(200)
  })

  test("an unknown, malformed or another device's rotated token is 404 Resource not found.", async () => {
    for (const path of ["/s/" + "A".repeat(43), "/s/short", "/s/" + "x".repeat(300), "/s/%00%01"]) {
      const res = await fetchLink(path)
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ success: false, message: "Resource not found." })
    }
  })
})

describe("formats [D122]", () => {
  test("default: the wg-quick config of the first granted WireGuard server by id, exactly as the per-server download", async () => {
    const m = await member()
    const res = await fetchLink(m.path)
    expect(res.status).toBe(200)
    const download = await app.get(`/v1/devices/${m.device}/wireguard/${m.wg1.id}`, { token: m.user.token })
    expect(res.text).toBe(download.text)
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(res.headers.get("content-disposition")).toBe(download.headers.get("content-disposition"))
    expectLinkHeaders(res.headers)
    // ?server= and ?format=wireguard name the same
    const second = await fetchLink(`${m.path}?format=wireguard&server=${m.wg2.id}`)
    expect(second.status).toBe(200)
    expect(second.text).toBe(await ok(m.me.vpn.deviceWireguard({ path: { device: m.device, server: m.wg2.id } })))
    // any User-Agent that is no sing-box or Clash app gets the same
    expect((await fetchLink(m.path, { "user-agent": "WireGuard/1.0.16 (iOS)" })).text).toBe(download.text)
  })

  test("?server= answers as the per-server download: 404 unknown or OpenVPN, 403 not granted; 422 for a bad format or server", async () => {
    const m = await member()
    const elsewhere = await makeServer(app, { name: "Not in the plan" })
    for (const [query, server] of [
      [`?server=${elsewhere.id}`, elsewhere.id],
      ["?server=2147483000", 2147483000],
      [`?server=${m.ovpn.id}`, m.ovpn.id]
    ] as const) {
      const link = await fetchLink(m.path + query)
      const download = await app.get(`/v1/devices/${m.device}/wireguard/${server}`, { token: m.user.token })
      expect([link.status, link.body]).toEqual([download.status, download.body])
    }
    expect((await fetchLink(`${m.path}?server=${elsewhere.id}`)).body.message).toBe("Your plan does not include this server.")
    const bad = await fetchLink(`${m.path}?format=pdf&server=abc`)
    expect(bad.status).toBe(422)
    expect(bad.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { format: ["The selected format is invalid."], server: ["The server field must be an integer."] }
    })
    const openvpn = await fetchLink(`${m.path}?format=openvpn&server=${m.wg1.id}`)
    expect(openvpn.status).toBe(404)
  })

  test("openvpn: the .ovpn of the first granted OpenVPN server, as its download", async () => {
    const m = await member()
    const res = await fetchLink(`${m.path}?format=openvpn`)
    expect(res.status).toBe(200)
    const download = await app.get(`/v1/devices/${m.device}/openvpn/${m.ovpn.id}`, { token: m.user.token })
    expect(res.text).toBe(download.text)
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8")
    expect(res.headers.get("content-disposition")).toBe(download.headers.get("content-disposition"))
    expectLinkHeaders(res.headers)
    expect((await fetchLink(`${m.path}?format=openvpn&server=${m.ovpn.id}`)).text).toBe(download.text)
  })

  test("zip: one <server-name>.conf per WireGuard server and <server-name>.ovpn per OpenVPN server, names sanitised", async () => {
    const m = await member()
    const res = await fetchRaw(`${m.path}?format=zip`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/zip")
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="My-Phone.zip"')
    expectLinkHeaders(res.headers)
    const files = unzipSync(new Uint8Array(await res.arrayBuffer()))
    const n = seq
    expect(Object.keys(files).sort()).toEqual([`Amsterdam-${n}.conf`, `Paris-${n}.ovpn`, `Z-rich-${n}--.conf`])
    const conf = (server: number) => ok(m.me.vpn.deviceWireguard({ path: { device: m.device, server } }))
    expect(strFromU8(files[`Amsterdam-${n}.conf`]!)).toBe(await conf(m.wg1.id))
    expect(strFromU8(files[`Z-rich-${n}--.conf`]!)).toBe(await conf(m.wg2.id))
    expect(strFromU8(files[`Paris-${n}.ovpn`]!)).toBe(await ok(m.me.vpn.deviceOpenvpn({ path: { device: m.device, server: m.ovpn.id } })))
  })

  test("zip: two servers of one name are two files", async () => {
    const m = await member({ names: ["Same Name", "Same Name"] })
    const files = unzipSync(new Uint8Array(await (await fetchRaw(`${m.path}?format=zip`)).arrayBuffer()))
    expect(Object.keys(files).sort()).toEqual([`Paris-${seq}.ovpn`, "Same-Name.conf", `Same-Name-${m.wg2.id}.conf`].sort())
  })

  test("sing-box: by ?format= or a sing-box app's User-Agent, one endpoint per WireGuard server and a urltest selected by default", async () => {
    const m = await member()
    const agents: ReadonlyArray<Record<string, string>> = [
      {},
      { "user-agent": "SFA/1.11.4 (Android 14; sing-box 1.11.4)" },
      { "user-agent": "sing-box 1.12.0" }
    ]
    for (const headers of agents) {
      const res = await fetchLink(Object.keys(headers).length === 0 ? `${m.path}?format=sing-box` : m.path, headers)
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8")
      expect(res.headers.get("content-disposition")).toBe('attachment; filename="My-Phone.json"')
      expectLinkHeaders(res.headers)
      const config = res.body
      expect(config.endpoints.map((e: { type: string; tag: string }) => [e.type, e.tag])).toEqual([
        ["wireguard", `Amsterdam ${seq}`],
        ["wireguard", `Zürich ${seq}/α`]
      ])
      const auto = config.outbounds.find((o: { type: string }) => o.type === "urltest")
      expect(auto.outbounds).toEqual(config.endpoints.map((e: { tag: string }) => e.tag))
      expect(config.route.final).toBe(auto.tag)
    }
    // the keys and addresses are the device's, as in its wg-quick configs
    const conf = await ok(m.me.vpn.deviceWireguard({ path: { device: m.device, server: m.wg1.id } }))
    const config = (await fetchLink(`${m.path}?format=sing-box`)).body
    expect(config.endpoints[0].private_key).toBe(/^PrivateKey = (.+)$/m.exec(conf)![1])
    expect(config.endpoints[0].address).toEqual([`${/^Address = ([^/]+)/m.exec(conf)![1]}/32`])
  })

  test("clash: by ?format= or a Clash, mihomo or Stash User-Agent, one wireguard proxy per server and a url-test group", async () => {
    const m = await member()
    for (const agent of ["clash-verge/v2.0.3", "mihomo/1.19.2", "Stash/2.7.1 Clash/1.9.0", "ClashMetaForAndroid/2.11.5.Meta"]) {
      const res = await fetchLink(m.path, { "user-agent": agent })
      expect(res.status).toBe(200)
      expect(res.headers.get("content-type")).toBe("application/yaml; charset=utf-8")
      expect(res.headers.get("content-disposition")).toBe('attachment; filename="My-Phone.yaml"')
      expectLinkHeaders(res.headers)
      const config = parseYaml(res.text)
      expect(config.proxies.map((p: { type: string; name: string }) => [p.type, p.name])).toEqual([
        ["wireguard", `Amsterdam ${seq}`],
        ["wireguard", `Zürich ${seq}/α`]
      ])
      expect(config["proxy-groups"]).toEqual([expect.objectContaining({ type: "url-test", proxies: [`Amsterdam ${seq}`, `Zürich ${seq}/α`] })])
    }
    expect((await fetchLink(`${m.path}?format=clash`)).headers.get("content-type")).toBe("application/yaml; charset=utf-8")
  })

  test("qr: a PNG QR code of the link itself", async () => {
    const m = await member()
    const res = await fetchRaw(`${m.path}?format=qr`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("image/png")
    expectLinkHeaders(res.headers)
    const png = PNG.sync.read(Buffer.from(await res.arrayBuffer()))
    const code = jsQR(new Uint8ClampedArray(png.data), png.width, png.height)
    expect(code?.data).toBe(m.url)
  })
})

describe("headers and 304 [D122]", () => {
  test("Subscription-Userinfo: the period's upload (received from the devices) and download, the quota and the expiry", async () => {
    const m = await member({ limitGb: 50 })
    const [service] = await app.sql<{ expires_at: Date }>`select expires_at from services where id = ${m.serviceId}`
    const expire = Math.floor(service!.expires_at.getTime() / 1000)
    expect((await fetchLink(m.path)).headers.get("subscription-userinfo")).toBe(`upload=0; download=0; total=${50 * GIB}; expire=${expire}`)
    // the node reports the peer's counters: rx (what the device sent) is its upload
    const conf = (await fetchLink(m.path)).text
    const publicKey = (
      await app.sql<{ public_key: string }>`select public_key from wireguard_peers where device_id = ${m.device} and server_id = ${m.wg1.id}`
    )[0]!.public_key
    const node = await typedClient(app, { token: m.wg1.nodeToken })
    // answered 200 (else `ok` throws)
    await ok(node.node.usage({ payload: [{ public_key: publicKey, rx_bytes: 1000, tx_bytes: 5000 }], headers: {} }))
    expect(conf).toContain("PrivateKey")
    expect((await fetchLink(m.path)).headers.get("subscription-userinfo")).toBe(`upload=1000; download=5000; total=${50 * GIB}; expire=${expire}`)
    // an admin's bytes are a sum without a direction: download
    await ok(staff.vpnAdmin.recordUsage({ path: { service: m.serviceId }, payload: { bytes: 7000 } }))
    expect((await fetchLink(m.path)).headers.get("subscription-userinfo")).toBe(`upload=1000; download=12000; total=${50 * GIB}; expire=${expire}`)
    expect((await ok(m.me.vpn.currentBandwidth())).used_bytes).toBe(13_000)
    // an unlimited plan: total=0
    const unlimited = await member({ limitGb: 0 })
    expect((await fetchLink(unlimited.path)).headers.get("subscription-userinfo")).toMatch(/^upload=0; download=0; total=0; expire=\d+$/)
  })

  test("If-None-Match with the ETag answers 304 (no body, the same headers); a change of usage changes the ETag", async () => {
    const m = await member()
    for (const format of ["wireguard", "zip", "sing-box", "clash", "openvpn", "qr"]) {
      const first = await fetchRaw(`${m.path}?format=${format}`)
      expect(first.status).toBe(200)
      const etag = first.headers.get("etag")!
      const again = await fetchRaw(`${m.path}?format=${format}`)
      expect(again.headers.get("etag")).toBe(etag)
      expect(new Uint8Array(await again.arrayBuffer())).toEqual(new Uint8Array(await first.arrayBuffer()))
      for (const match of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const cached = await fetchRaw(`${m.path}?format=${format}`, { "if-none-match": match })
        expect(cached.status).toBe(304)
        expect(await cached.text()).toBe("")
        expect(cached.headers.get("etag")).toBe(etag)
        expectLinkHeaders(cached.headers)
      }
      expect((await fetchRaw(`${m.path}?format=${format}`, { "if-none-match": '"stale"' })).status).toBe(200)
    }
    const before = (await fetchRaw(m.path)).headers.get("etag")!
    await ok(staff.vpnAdmin.recordUsage({ path: { service: m.serviceId }, payload: { bytes: 1 } }))
    const after = await fetchRaw(m.path, { "if-none-match": before })
    expect(after.status).toBe(200)
    expect(after.headers.get("etag")).not.toBe(before)
    // formats differ: so do their ETags
    const tags = new Set(
      await Promise.all(
        ["wireguard", "zip", "sing-box", "clash", "openvpn", "qr"].map(async (f) => (await fetchRaw(`${m.path}?format=${f}`)).headers.get("etag"))
      )
    )
    expect(tags.size).toBe(6)
  }, 60_000)
})

describe("access follows the account and the service [D122] [D91]", () => {
  /** the link's answer and the per-server download's, as [status, body] */
  const both = async (m: Awaited<ReturnType<typeof member>>, token = m.user.token) => {
    const link = await fetchLink(m.path)
    const download = await app.get(`/v1/devices/${m.device}/wireguard/${m.wg1.id}`, { token })
    return { link: [link.status, link.body], download: [download.status, download.body] }
  }

  test("a disabled user: as that user's download (401); enabled again, served", async () => {
    const m = await member()
    await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { status: 0 } }))
    const { download, link } = await both(m)
    expect(link).toEqual(download)
    expect(link).toEqual([401, { success: false, message: "Unauthenticated." }])
    for (const format of ["zip", "sing-box", "clash", "openvpn", "qr"]) expect((await fetchLink(`${m.path}?format=${format}`)).status).toBe(401)
    await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { status: 1 } }))
    expect((await fetchLink(m.path)).status).toBe(200)
  })

  test("a suspended service: 423 Service suspended. in every format, as the download", async () => {
    const m = await member({ status: "suspended" })
    const { download, link } = await both(m)
    expect(link).toEqual(download)
    expect(link).toEqual([423, { success: false, message: "Service suspended." }])
    for (const format of ["zip", "sing-box", "clash", "openvpn", "qr"]) {
      expect((await fetchLink(`${m.path}?format=${format}`)).body).toEqual({ success: false, message: "Service suspended." })
    }
  })

  test("an expired or cancelled service, or none: 403 Your plan does not include this server., as the download", async () => {
    const m = await member()
    await app.sql`update services set status = 'cancelled' where id = ${m.serviceId}`
    const { download, link } = await both(m)
    expect(link).toEqual(download)
    expect(link).toEqual([403, { success: false, message: "Your plan does not include this server." }])
    for (const format of ["zip", "sing-box", "clash", "openvpn", "qr"]) expect((await fetchLink(`${m.path}?format=${format}`)).status).toBe(403)
    const expired = await member()
    await app.sql`update services set expires_at = ${new Date(app.clock.get().getTime() - DAY)} where id = ${expired.serviceId}`
    expect((await both(expired)).link).toEqual([403, { success: false, message: "Your plan does not include this server." }])
  })

  test("a plan without a server of the format: 403; with one, that format is served", async () => {
    const user = await app.createUser()
    const plan = await makePlan(app)
    await makeService(app, user.id, plan)
    await makeServer(app, { protocol: "openvpn", planIds: [plan.planId], name: "Only OpenVPN" })
    const me = await typedClient(app, { token: user.token })
    const device = (await ok(me.vpn.createDevice({ payload: { name: "Router", platform: "router" } }))).id
    const url = (await ok(me.vpn.getDevice({ path: { device } }))).subscription_url
    const path = new URL(url).pathname
    for (const format of ["wireguard", "sing-box", "clash"]) {
      expect((await fetchLink(`${path}?format=${format}`)).body).toEqual({ success: false, message: "Your plan does not include this server." })
    }
    expect((await fetchLink(`${path}?format=openvpn`)).status).toBe(200)
    expect((await fetchRaw(`${path}?format=zip`)).status).toBe(200)
  })

  test("over the quota: 423 Bandwidth limit exceeded. on a suspend plan; served on a throttle plan ([D104])", async () => {
    const m = await member({ limitGb: 1 })
    await ok(staff.vpnAdmin.recordUsage({ path: { service: m.serviceId }, payload: { bytes: GIB } }))
    const { download, link } = await both(m)
    expect(link).toEqual(download)
    expect(link).toEqual([423, { success: false, message: "Bandwidth limit exceeded." }])
    await ok(staff.catalogAdmin.updatePlan({ path: { plan: m.plan.planId }, payload: { quota_action: "throttle", throttle_mbps: 2 } }))
    const throttled = await fetchLink(m.path)
    expect(throttled.status).toBe(200)
    expect(throttled.headers.get("subscription-userinfo")).toMatch(new RegExp(`^upload=0; download=${GIB}; total=${GIB}; expire=\\d+$`))
  })
})

describe("rotation and revocation [D122] [D90] [D91]", () => {
  test("POST .../subscription/rotate: 200 the device with a new link; the old one is 404 at once, the keys stay", async () => {
    const m = await member()
    const conf = (await fetchLink(m.path)).text
    const rotated = await app.post(`/v1/devices/${m.device}/subscription/rotate`, { token: m.user.token })
    expect(rotated.status).toBe(200)
    expect(rotated.headers.get("cache-control")).toBe("no-store")
    const detail = (await app.get(`/v1/devices/${m.device}`, { token: m.user.token })).body.data
    expect(rotated.body).toEqual({ success: true, data: detail })
    expect(detail.subscription_url).toMatch(LINK)
    expect(detail.subscription_url).not.toBe(m.url)
    const old = await fetchLink(m.path)
    expect(old.status).toBe(404)
    expect(old.body).toEqual({ success: false, message: "Resource not found." })
    const fresh = await fetchLink(new URL(detail.subscription_url).pathname)
    expect(fresh.status).toBe(200)
    // the link is not the key: the same config
    expect(fresh.text).toBe(conf)
  })

  test("rotate of another user's device or an unknown one is 404; without a token 401", async () => {
    const m = await member()
    const other = await app.createUser()
    expect((await app.post(`/v1/devices/${m.device}/subscription/rotate`, { token: other.token })).status).toBe(404)
    expect((await app.post("/v1/devices/2147483000/subscription/rotate", { token: m.user.token })).status).toBe(404)
    expect((await app.post(`/v1/devices/${m.device}/subscription/rotate`)).status).toBe(401)
    expect((await fetchLink(m.path)).status).toBe(200)
  })

  test("rotating the device ends its link (and its keys); revoke-all ends every link; deleting the device ends it", async () => {
    const m = await member()
    const conf = (await fetchLink(m.path)).text
    await ok(m.me.vpn.rotateDevice({ path: { device: m.device } }))
    expect((await fetchLink(m.path)).status).toBe(404)
    const renewed = (await ok(m.me.vpn.getDevice({ path: { device: m.device } }))).subscription_url
    expect(renewed).not.toBe(m.url)
    expect((await fetchLink(new URL(renewed).pathname)).text).not.toBe(conf)

    await ok(m.me.vpn.revokeVpnAccess())
    expect((await fetchLink(new URL(renewed).pathname)).status).toBe(404)
    const third = (await ok(m.me.vpn.getDevice({ path: { device: m.device } }))).subscription_url
    expect((await fetchLink(new URL(third).pathname)).status).toBe(200)

    await ok(m.me.vpn.deleteDevice({ path: { device: m.device } }))
    expect((await fetchLink(new URL(third).pathname)).body).toEqual({ success: false, message: "Resource not found." })
  })

  test("a rotation on one instance is a 404 on another at once (nothing cached)", async () => {
    const other = await makeTestApp({ reset: false, config: { logLevel: LogLevel.Error } })
    try {
      const m = await member()
      // the peer made here (the test key generator of the other instance would draw the same keys)
      const here = await fetchLink(m.path)
      expect(here.status).toBe(200)
      const there = await other.get(m.path, { headers: { accept: "*/*" } })
      expect(there.status).toBe(200)
      expect(there.text).toBe(here.text)
      await ok(m.me.vpn.rotateSubscription({ path: { device: m.device } }))
      expect((await other.get(m.path, { headers: { accept: "*/*" } })).status).toBe(404)
    } finally {
      await other.dispose()
    }
  })
})

describe("the limit and the fetch log [D122]", () => {
  test("60 requests a minute per link: the 61st is 429 in the envelope with the limits' headers, not logged; the next minute serves again", async () => {
    const m = await member()
    const second = await ok(m.me.vpn.createDevice({ payload: { name: "Tablet", platform: "android" } }))
    const otherUrl = (await ok(m.me.vpn.getDevice({ path: { device: second.id } }))).subscription_url
    const answers = await Promise.all(Array.from({ length: 60 }, () => fetchLink(m.path, { "user-agent": "burst" })))
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(200))
    expect(answers.map((a) => Number(a.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i))
    expect(answers[0]!.headers.get("x-ratelimit-limit")).toBe("60")
    const refused = await fetchLink(m.path, { "user-agent": "burst" })
    expect(refused.status).toBe(429)
    expect(refused.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect(refused.headers.get("x-ratelimit-limit")).toBe("60")
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0")
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    // another link of the same user is its own
    expect((await fetchLink(new URL(otherUrl).pathname)).status).toBe(200)
    expect(await ok(m.me.vpn.subscriptionFetches({ path: { device: m.device } }))).toHaveLength(50)
    app.clock.advance(61_000)
    expect((await fetchLink(m.path)).status).toBe(200)
  })

  test("GET .../subscription/fetches: the last 50 answered fetches (200 and 304), newest first, {at, address, user_agent}", async () => {
    const m = await member()
    expect(await ok(m.me.vpn.subscriptionFetches({ path: { device: m.device } }))).toEqual([])
    const first = await fetchLink(m.path, { "user-agent": "WireGuard/1.0", "x-forwarded-for": "203.0.113.7" })
    app.clock.advance(1000)
    await fetchLink(m.path, { "user-agent": "mihomo/1.19", "x-forwarded-for": "2001:db8::5", "if-none-match": first.headers.get("etag")! })
    app.clock.advance(1000)
    // refused answers are not fetches
    expect((await fetchLink(`${m.path}?format=nope`, { "x-forwarded-for": "198.51.100.99" })).status).toBe(422)
    const log = await app.get(`/v1/devices/${m.device}/subscription/fetches`, { token: m.user.token })
    expect(log.status).toBe(200)
    expect(log.body.data).toEqual([
      { at: expect.any(String), address: "2001:db8::5", user_agent: "mihomo/1.19" },
      { at: expect.any(String), address: "203.0.113.7", user_agent: "WireGuard/1.0" }
    ])
    expect(Date.parse(log.body.data[0].at) - Date.parse(log.body.data[1].at)).toBe(1000)
    // the admin sees the same on the user's devices
    const seen = await app.get(`/v1/admin/users/${m.user.id}/devices`, { token: admin.token })
    expect(seen.status).toBe(200)
    const device = seen.body.data.find((d: { id: number }) => d.id === m.device)
    expect(device.subscription_fetches).toEqual(log.body.data)
    expect(device.subscription_url).toBeUndefined()
    // another user's device: 404
    const other = await app.createUser()
    expect((await app.get(`/v1/devices/${m.device}/subscription/fetches`, { token: other.token })).status).toBe(404)
  })

  test("the log keeps the last 50", async () => {
    const m = await member()
    for (let i = 0; i < 55; i++) {
      await fetchLink(m.path, { "user-agent": `app-${i}` })
      app.clock.advance(1000)
      if (i === 40) app.clock.advance(60_000)
    }
    const log = await ok(m.me.vpn.subscriptionFetches({ path: { device: m.device } }))
    expect(log).toHaveLength(50)
    expect(log[0]!.user_agent).toBe("app-54")
    expect(log[49]!.user_agent).toBe("app-5")
    const [count] = await app.sql<{ n: number }>`select count(*)::int as n from vpn_subscription_fetches where device_id = ${m.device}`
    expect(count!.n).toBe(50)
  }, 60_000)
})

describe("the contract [D122]", () => {
  test("the OpenAPI document has the link (outside /v1) with its types and headers, and the two device routes", async () => {
    const doc = (await app.get("/v1/openapi.json")).body
    const link = doc.paths["/s/{token}"].get
    expect(link.security).toEqual([])
    expect(Object.keys(link.responses["200"].content).sort()).toEqual([
      "application/json; charset=utf-8",
      "application/yaml; charset=utf-8",
      "application/zip",
      "image/png",
      "text/plain; charset=utf-8"
    ])
    for (const status of ["200", "304"]) {
      expect(Object.keys(link.responses[status].headers)).toEqual(
        expect.arrayContaining(["Subscription-Userinfo", "Profile-Update-Interval", "Cache-Control", "ETag", "Content-Disposition", "X-RateLimit-Limit"])
      )
    }
    expect(link.parameters.find((p: { name: string }) => p.name === "format").schema.enum).toEqual(["wireguard", "zip", "sing-box", "clash", "openvpn", "qr"])
    expect(doc.paths["/v1/devices/{device}/subscription/rotate"].post).toBeDefined()
    expect(doc.paths["/v1/devices/{device}/subscription/fetches"].get).toBeDefined()
  })
})
