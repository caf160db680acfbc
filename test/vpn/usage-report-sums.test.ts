import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { GIB, makePlan, makeServer, makeService, setUsage } from "./fixtures.ts"

// Issue 27: a node's report is summed per service in one pass and written in one statement that
// returns the new totals (no read of the totals first), and the device bytes of a counters report
// are counted by one statement per report. What that must keep: the quota notices see the period
// go from its total before the report to after it ([D96]), the 2^53 - 1 refusals name the same
// entries ([D54] rev. 2), and every device's bytes are its peers' increases, once ([D107], [D94]).
setDefaultTimeout(30_000)

const MAX = Number.MAX_SAFE_INTEGER

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const month = () => app.clock.get().toISOString().slice(0, 7)
type Server = { readonly id: number; readonly nodeToken: string }

/** a user with a current service on `plan` and a downloaded WireGuard peer on `server` */
const subscriberOn = async (server: Server, plan: { readonly planId: number; readonly cycleId: number }) => {
  const user = await app.createUser()
  const serviceId = await makeService(app, user.id, plan)
  const me = await typedClient(app, { token: user.token })
  expect(await ok(me.vpn.wireguard({ path: { server: server.id } }))).toContain("[Interface]")
  const [peer] = await app.sql<{ public_key: string }>`
    select public_key from wireguard_peers where user_id = ${user.id} and server_id = ${server.id}`
  return { user, serviceId, publicKey: peer!.public_key }
}

const usage = (server: Server, entries: Array<{ public_key: string; rx_bytes: number; tx_bytes: number }>) =>
  app.post("/v1/node/usage", { token: server.nodeToken, body: entries })

const stored = async (serviceId: number) => {
  const rows = await app.sql<{ rx: string; tx: string }>`
    select rx_bytes::text as rx, tx_bytes::text as tx from usage_records where service_id = ${serviceId} and period = ${`${month()}-01`}::date`
  return rows[0] ? { rx: rows[0].rx, tx: rows[0].tx } : undefined
}

const noticesOf = async (serviceId: number) =>
  (
    await app.sql<{ dedupe_key: string }>`
    select dedupe_key from outbox where dedupe_key like ${`quota-%:${serviceId}:%`} order by id`
  ).map((r) => r.dedupe_key)

describe("a usage report summed per service [D54] [D96]", () => {
  test("the notices see each period go from its total before the report to its total after, entries summed", async () => {
    const plan = await makePlan(app, 10)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await subscriberOn(server, plan)
    const b = await subscriberOn(server, plan)
    const node = await typedClient(app, { token: server.nodeToken })
    expect(await ok(node.node.usage({ headers: {}, payload: [{ public_key: a.publicKey, rx_bytes: 7 * GIB, tx_bytes: 0 }] }))).toEqual({ accepted: 1 })
    expect(await noticesOf(a.serviceId)).toEqual([])

    // a: 7 GB, then three entries of 3.5 GB in all: 80 % and 100 % crossed by this one report;
    // b: 8 GB in two entries: 80 % only
    const res = await ok(
      node.node.usage({
        headers: {},
        payload: [
          { public_key: a.publicKey, rx_bytes: GIB / 2, tx_bytes: 0 },
          { public_key: b.publicKey, rx_bytes: 4 * GIB, tx_bytes: 0 },
          { public_key: a.publicKey, rx_bytes: 0, tx_bytes: GIB / 2 },
          { public_key: b.publicKey, rx_bytes: 0, tx_bytes: 4 * GIB },
          { public_key: a.publicKey, rx_bytes: 2 * GIB, tx_bytes: GIB / 2 }
        ]
      })
    )
    expect(res).toEqual({ accepted: 5 })
    expect(await stored(a.serviceId)).toEqual({ rx: String(9.5 * GIB), tx: String(GIB) })
    expect(await stored(b.serviceId)).toEqual({ rx: String(4 * GIB), tx: String(4 * GIB) })
    expect(await noticesOf(a.serviceId)).toEqual([`quota-80:${a.serviceId}:${month()}`, `quota-100:${a.serviceId}:${month()}`])
    expect(await noticesOf(b.serviceId)).toEqual([`quota-80:${b.serviceId}:${month()}`])

    await app.run(runJobsOnce)
    const mails = app.outbox.filter((m) => m.to === a.user.email || m.to === b.user.email).map((m) => m.text)
    expect(mails.filter((text) => text.includes("has used 10.50 GB of its 10 GB"))).toHaveLength(2)
    expect(mails.filter((text) => text.includes("has used 8.00 GB of its 10 GB"))).toHaveLength(1)

    // more bytes after the thresholds: no notice again
    expect(await ok(node.node.usage({ headers: {}, payload: [{ public_key: b.publicKey, rx_bytes: 1, tx_bytes: 1 }] }))).toEqual({ accepted: 1 })
    expect(await noticesOf(b.serviceId)).toEqual([`quota-80:${b.serviceId}:${month()}`])
  })

  test("a period stored past 2^53 - 1 by hand refuses even a report of zeros, naming the service's last entry; nothing saved", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await subscriberOn(server, plan)
    const b = await subscriberOn(server, plan)
    await setUsage(app, a.serviceId, month(), MAX, 5)
    const res = await usage(server, [
      { public_key: a.publicKey, rx_bytes: 0, tx_bytes: 0 },
      { public_key: b.publicKey, rx_bytes: 10, tx_bytes: 10 },
      { public_key: a.publicKey, rx_bytes: 0, tx_bytes: 0 }
    ])
    expect(res.status).toBe(422)
    expect(res.body.errors).toEqual({ "2.rx_bytes": ["The 2.rx_bytes field would carry the usage total past 9007199254740991 bytes."] })
    expect(await stored(b.serviceId)).toBeUndefined()
    expect(await stored(a.serviceId)).toEqual({ rx: String(MAX), tx: "5" })
  })

  test("services whose sums alone pass the bound, and those refused by their stored totals, are all named, in report order", async () => {
    const plan = await makePlan(app, 0)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const a = await subscriberOn(server, plan)
    const b = await subscriberOn(server, plan)
    const c = await subscriberOn(server, plan)
    await setUsage(app, b.serviceId, month(), MAX - 3)
    // a's entries pass the bound by themselves; b's period by its stored total; c fits
    const alone = await usage(server, [
      { public_key: c.publicKey, rx_bytes: 1, tx_bytes: 1 },
      { public_key: b.publicKey, rx_bytes: 2, tx_bytes: 2 },
      { public_key: a.publicKey, rx_bytes: MAX - 1, tx_bytes: 0 },
      { public_key: a.publicKey, rx_bytes: 1, tx_bytes: 1 }
    ])
    expect(alone.status).toBe(422)
    expect(Object.keys(alone.body.errors)).toEqual(["1.tx_bytes", "3.tx_bytes"])
    // the same without a: b is refused by the statement that writes, c is not saved either
    const stored_ = await usage(server, [
      { public_key: c.publicKey, rx_bytes: 1, tx_bytes: 1 },
      { public_key: b.publicKey, rx_bytes: 2, tx_bytes: 2 }
    ])
    expect(stored_.status).toBe(422)
    expect(Object.keys(stored_.body.errors)).toEqual(["1.tx_bytes"])
    expect(await stored(c.serviceId)).toBeUndefined()
    expect(await stored(a.serviceId)).toBeUndefined()
    expect(await stored(b.serviceId)).toEqual({ rx: String(MAX - 3), tx: "0" })
  })
})

describe("device bytes of a counters report [D107] [D94]", () => {
  const keyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

  test("one report with first and repeated peers counts each device's increase once; a repeat adds nothing", async () => {
    const plan = await makePlan(app, 0)
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const server = await makeServer(app, { planIds: [plan.planId] })
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: server.nodeToken })
    const device = async (name: string) => {
      const made = await ok(me.vpn.createDevice({ payload: { name, platform: "linux" } }))
      const conf = await ok(me.vpn.deviceWireguard({ path: { device: made.id, server: server.id } }))
      return { id: made.id, key: keyOf(conf) }
    }
    const phone = await device("Phone")
    const laptop = await device("Laptop")
    const tablet = await device("Tablet")
    const bytesOf = async (id: number) => {
      const detail = await ok(me.vpn.getDevice({ path: { device: id } }))
      return {
        total: detail.period_bytes,
        servers: detail.servers.map((s) => [s.rx_bytes, s.tx_bytes])
      }
    }
    const counters = (entries: Array<Record<string, unknown>>) => ok(node.node.counters({ headers: {}, payload: entries }))

    // the phone's first report
    expect(await counters([{ public_key: phone.key, rx_total: 100, tx_total: 10 }])).toEqual({ accepted: 1 })
    // the phone again (an update of its row), the laptop's first (an insert), the tablet at zero
    expect(
      await counters([
        { public_key: laptop.key, rx_total: 40, tx_total: 4 },
        { public_key: phone.key, rx_total: 250, tx_total: 30 },
        { public_key: tablet.key, rx_total: 0, tx_total: 0 }
      ])
    ).toEqual({ accepted: 3 })
    expect(await bytesOf(phone.id)).toEqual({ total: 280, servers: [[250, 30]] })
    expect(await bytesOf(laptop.id)).toEqual({ total: 44, servers: [[40, 4]] })
    expect(await bytesOf(tablet.id)).toEqual({ total: 0, servers: [[0, 0]] })
    const [rows] = await app.sql<{ n: number }>`
      select count(*)::int as n from vpn_device_usage where device_id = ${tablet.id}`
    expect(rows!.n).toBe(0)

    // the same totals again: nothing added anywhere
    await counters([
      { public_key: laptop.key, rx_total: 40, tx_total: 4 },
      { public_key: phone.key, rx_total: 250, tx_total: 30 }
    ])
    expect(await bytesOf(phone.id)).toEqual({ total: 280, servers: [[250, 30]] })
    expect(await bytesOf(laptop.id)).toEqual({ total: 44, servers: [[40, 4]] })
    expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(324)
  })

  test("an OpenVPN user's device counts by username", async () => {
    const plan = await makePlan(app, 0)
    const user = await app.createUser()
    await makeService(app, user.id, plan)
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const me = await typedClient(app, { token: user.token })
    const node = await typedClient(app, { token: ovpn.nodeToken })
    const username = (await ok(me.vpn.vpnCredentials())).username
    const [credential] = await app.sql<{ device_id: number }>`select device_id from vpn_credentials where username = ${username}`
    const counters = (rx: number, tx: number) => ok(node.node.counters({ headers: {}, payload: [{ username, rx_total: rx, tx_total: tx }] }))
    expect(await counters(70, 7)).toEqual({ accepted: 1 })
    expect(await counters(100, 7)).toEqual({ accepted: 1 })
    const detail = await ok(me.vpn.getDevice({ path: { device: credential!.device_id } }))
    expect(detail.period_bytes).toBe(107)
  })
})
