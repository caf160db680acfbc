import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import fc from "fast-check"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { DAY, makePlan, makeServer, makeService, setUsage } from "./fixtures.ts"

// [D94]: usage counted exactly once: `Idempotency-Key` on node reports, cumulative counters.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const MAX = 9007199254740991
const month = () => app.clock.get().toISOString().slice(0, 7)

const usageOf = async (serviceId: number) => {
  const rows = await app.sql<{ rx: number; tx: number }>`
    select rx_bytes as rx, tx_bytes as tx from usage_records where service_id = ${serviceId} and period = ${`${month()}-01`}::date`
  return rows[0] ? { rx: Number(rows[0].rx), tx: Number(rows[0].tx) } : { rx: 0, tx: 0 }
}

const keyCount = async (serverId: number) => (await app.sql<{ n: number }>`select count(*)::int as n from usage_reports where server_id = ${serverId}`)[0]!.n

type Server = { readonly id: number; readonly nodeToken: string }

/** A user with a current service on a plan and a WireGuard peer on `server` (downloaded config). */
const subscriberOn = async (server: Server, plan: { readonly planId: number; readonly cycleId: number }) => {
  const user = await app.createUser()
  const serviceId = await makeService(app, user.id, plan)
  return { user, serviceId, ...(await peerOn(user, server)) }
}

const peerOn = async (user: { readonly id: number; readonly token: string }, server: Server) => {
  const me = await typedClient(app, { token: user.token })
  expect(await ok(me.vpn.wireguard({ path: { server: server.id } }))).toContain("[Interface]")
  const [peer] = await app.sql<{ public_key: string }>`
    select public_key from wireguard_peers where user_id = ${user.id} and server_id = ${server.id}`
  return { publicKey: peer!.public_key }
}

/** Two subscribers on one fresh server (and a second server on the same plan). */
const setup = async () => {
  const plan = await makePlan(app, 0)
  const server = await makeServer(app, { planIds: [plan.planId] })
  const other = await makeServer(app, { planIds: [plan.planId] })
  const a = await subscriberOn(server, plan)
  const b = await subscriberOn(server, plan)
  const me = await typedClient(app, { token: a.user.token })
  const username = (await ok(me.vpn.vpnCredentials())).username
  return { plan, server, other, a, b, username }
}

const send = (route: "usage" | "counters", server: Server, body: unknown, key?: string) =>
  app.post(`/v1/node/${route}`, { token: server.nodeToken, body, ...(key !== undefined ? { headers: { "idempotency-key": key } } : {}) })

describe("POST /v1/node/usage with Idempotency-Key [D94]", () => {
  test("the same key again answers the first answer and adds nothing; another key counts again", async () => {
    const { a, server } = await setup()
    const report = [
      { public_key: a.publicKey, rx_bytes: 1000, tx_bytes: 10 },
      { public_key: "unknown", rx_bytes: 1, tx_bytes: 1 }
    ]
    const first = await send("usage", server, report, "report-1")
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ success: true, data: { accepted: 1 } })
    const again = await send("usage", server, report, "report-1")
    expect(again.status).toBe(first.status)
    expect(again.body).toEqual(first.body)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1000, tx: 10 })
    // the first answer, even when the retry's body differs: the key names the report
    const changed = await send("usage", server, [], "report-1")
    expect(changed.body).toEqual({ success: true, data: { accepted: 1 } })
    const next = await send("usage", server, report, "report-2")
    expect(next.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 2000, tx: 20 })
    const me = await typedClient(app, { token: a.user.token })
    expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(2020)
  })

  test("without a key every report counts, as before", async () => {
    const { a, server } = await setup()
    for (let i = 0; i < 2; i++) await send("usage", server, [{ public_key: a.publicKey, rx_bytes: 5, tx_bytes: 5 }])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 10, tx: 10 })
    expect(await keyCount(server.id)).toBe(0)
  })

  test("the same key from another node is that node's own report", async () => {
    const { a, server, other } = await setup()
    const peer = await peerOn(a.user, other)
    await send("usage", server, [{ public_key: a.publicKey, rx_bytes: 100, tx_bytes: 0 }], "shared-key")
    const res = await send("usage", other, [{ public_key: peer.publicKey, rx_bytes: 7, tx_bytes: 0 }], "shared-key")
    expect(res.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 107, tx: 0 })
  })

  test("concurrent retries under one key count once and all answer the first answer", async () => {
    const { a, b, server } = await setup()
    const report = [
      { public_key: a.publicKey, rx_bytes: 300, tx_bytes: 3 },
      { public_key: b.publicKey, rx_bytes: 50, tx_bytes: 5 }
    ]
    const answers = await Promise.all(Array.from({ length: 20 }, () => send("usage", server, report, "burst")))
    expect(answers.map((r) => r.status)).toEqual(Array.from({ length: 20 }, () => 200))
    expect(answers.every((r) => JSON.stringify(r.body) === JSON.stringify({ success: true, data: { accepted: 2 } }))).toBe(true)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 300, tx: 3 })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 50, tx: 5 })
  }, 30_000)

  test("a key is scoped to its route: the same key on /v1/node/counters is a report of its own", async () => {
    const { a, server } = await setup()
    await send("usage", server, [{ public_key: a.publicKey, rx_bytes: 10, tx_bytes: 0 }], "k")
    const res = await send("counters", server, [{ public_key: a.publicKey, rx_total: 5, tx_total: 0 }], "k")
    expect(res.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 15, tx: 0 })
  })

  test("422 errors.idempotency_key for an empty, too long or non-visible-ASCII key; nothing counted", async () => {
    const { a, server } = await setup()
    const report = [{ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 1 }]
    for (const key of ["", "x".repeat(256), "with space", "caf\u00e9", "tab\there"]) {
      const res = await send("usage", server, report, key)
      expect(res.status).toBe(422)
      expect(res.body).toEqual({
        success: false,
        message: "The given data was invalid.",
        errors: { idempotency_key: ["The idempotency key must be between 1 and 255 visible ASCII characters."] }
      })
    }
    expect(await usageOf(a.serviceId)).toEqual({ rx: 0, tx: 0 })
    for (const key of ["x".repeat(255), "!~", "550e8400-e29b-41d4-a716-446655440000"]) {
      expect((await send("usage", server, report, key)).status).toBe(200)
    }
    // a bad key and a bad body: every error at once
    const both = await send("usage", server, [{ public_key: a.publicKey, rx_bytes: -1, tx_bytes: 1 }], "")
    expect(both.body.errors).toEqual({
      idempotency_key: ["The idempotency key must be between 1 and 255 visible ASCII characters."],
      "0.rx_bytes": ["The 0.rx_bytes field must be at least 0."]
    })
  })

  test("a refused report keeps no key: fixed and sent again under it, it counts", async () => {
    const { a, server } = await setup()
    const bad = await send("usage", server, [{ public_key: a.publicKey, rx_bytes: -5, tx_bytes: 0 }], "fix-me")
    expect(bad.status).toBe(422)
    await setUsage(app, a.serviceId, month(), MAX - 10)
    const past = await send("usage", server, [{ public_key: a.publicKey, rx_bytes: 11, tx_bytes: 0 }], "fix-me")
    expect(past.status).toBe(422)
    expect(past.body.errors).toEqual({ "0.rx_bytes": [`The 0.rx_bytes field would carry the usage total past ${MAX} bytes.`] })
    expect(await keyCount(server.id)).toBe(0)
    const fits = await send("usage", server, [{ public_key: a.publicKey, rx_bytes: 10, tx_bytes: 0 }], "fix-me")
    expect(fits.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: MAX, tx: 0 })
  })

  test("after 24 h a key is ignored (the report counts again) and the jobs purge it; younger keys stay", async () => {
    const { a, server } = await setup()
    const report = [{ public_key: a.publicKey, rx_bytes: 1, tx_bytes: 0 }]
    await send("usage", server, report, "old")
    app.clock.advance(DAY - 1000)
    await send("usage", server, report, "young")
    await send("usage", server, report, "old")
    expect(await usageOf(a.serviceId)).toEqual({ rx: 2, tx: 0 })
    app.clock.advance(1000)
    expect((await send("usage", server, report, "old")).status).toBe(200)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 3, tx: 0 })
    // the key taken over is fresh again: a retry now adds nothing
    await send("usage", server, report, "old")
    expect(await usageOf(a.serviceId)).toEqual({ rx: 3, tx: 0 })
    app.clock.advance(DAY - 500)
    await app.run(runJobsOnce)
    const left = await app.sql<{ idempotency_key: string }>`
      select idempotency_key from usage_reports where server_id = ${server.id} order by idempotency_key`
    expect(left.map((r) => r.idempotency_key)).toEqual(["old"])
    app.clock.advance(1000)
    await app.run(runJobsOnce)
    expect(await keyCount(server.id)).toBe(0)
  })
})

describe("POST /v1/node/counters [D94]", () => {
  const totals = (publicKey: string, rx: number, tx: number) => ({ public_key: publicKey, rx_total: rx, tx_total: tx })

  test("a peer's first report counts whole, then only the increase; a repeat adds nothing", async () => {
    const { a, b, server } = await setup()
    const first = await send("counters", server, [totals(a.publicKey, 1000, 200), totals(b.publicKey, 5, 0)])
    expect(first.status).toBe(200)
    expect(first.body).toEqual({ success: true, data: { accepted: 2 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1000, tx: 200 })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 5, tx: 0 })
    await send("counters", server, [totals(a.publicKey, 1500, 260)])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1500, tx: 260 })
    const repeat = await send("counters", server, [totals(a.publicKey, 1500, 260)])
    expect(repeat.body).toEqual({ success: true, data: { accepted: 1 } })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1500, tx: 260 })
    const me = await typedClient(app, { token: a.user.token })
    expect((await ok(me.vpn.currentBandwidth())).used_bytes).toBe(1760)
    expect(await usageOf(b.serviceId)).toEqual({ rx: 5, tx: 0 })
  })

  test("a total below the last one is a counter reset: the new totals count whole", async () => {
    const { a, server } = await setup()
    await send("counters", server, [totals(a.publicKey, 1000, 100)])
    await send("counters", server, [totals(a.publicKey, 40, 500)])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1040, tx: 600 })
    await send("counters", server, [totals(a.publicKey, 50, 510)])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 1050, tx: 610 })
  })

  test("a lost report loses nothing: the next cumulative report carries its traffic", async () => {
    const { a, server } = await setup()
    await send("counters", server, [totals(a.publicKey, 100, 10)])
    // the node's report of (250, 20) never arrived
    await send("counters", server, [totals(a.publicKey, 400, 40)])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 400, tx: 40 })
  })

  test("OpenVPN users by username on an OpenVPN node; unknown peers and peers of other servers are not counted", async () => {
    const { a, b, plan, server, other, username } = await setup()
    const ovpn = await makeServer(app, { protocol: "openvpn", planIds: [plan.planId] })
    const res = await send("counters", server, [totals(a.publicKey, 30, 3), totals("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 1, 1)])
    expect(res.body).toEqual({ success: true, data: { accepted: 1 } })
    const byName = await send("counters", ovpn, [
      { username, rx_total: 70, tx_total: 7 },
      { username: "u0-nobody", rx_total: 1, tx_total: 1 }
    ])
    expect(byName.body).toEqual({ success: true, data: { accepted: 1 } })
    await send("counters", ovpn, [{ username, rx_total: 100, tx_total: 7 }])
    expect(await usageOf(a.serviceId)).toEqual({ rx: 130, tx: 10 })
    const foreign = await send("counters", other, [totals(b.publicKey, 10, 10)])
    expect(foreign.body).toEqual({ success: true, data: { accepted: 0 } })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 0, tx: 0 })
  })

  test("totals of a peer without a current service are kept but not counted: later only the increase counts", async () => {
    const { a, plan, server } = await setup()
    await app.sql`update services set status = 'cancelled' where id = ${a.serviceId}`
    const none = await send("counters", server, [totals(a.publicKey, 5000, 500)])
    expect(none.body).toEqual({ success: true, data: { accepted: 0 } })
    const renewed = await makeService(app, a.user.id, plan, { createdAt: new Date(app.clock.get().getTime() + 1000) })
    await send("counters", server, [totals(a.publicKey, 5100, 550)])
    expect(await usageOf(renewed)).toEqual({ rx: 100, tx: 50 })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 0, tx: 0 })
  })

  test("Idempotency-Key: a retry answers the first answer and adds nothing", async () => {
    const { a, server } = await setup()
    await send("counters", server, [totals(a.publicKey, 100, 0)], "c-1")
    const report = [totals(a.publicKey, 0, 0)]
    const first = await send("counters", server, report, "c-2")
    expect(await usageOf(a.serviceId)).toEqual({ rx: 100, tx: 0 })
    // (0, 0) after (100, 0) was a reset; it is not seen again under its key
    await send("counters", server, [totals(a.publicKey, 30, 0)], "c-3")
    const retry = await send("counters", server, report, "c-2")
    expect(retry.status).toBe(200)
    expect(retry.body).toEqual(first.body)
    await send("counters", server, [totals(a.publicKey, 30, 0)], "c-3")
    expect(await usageOf(a.serviceId)).toEqual({ rx: 130, tx: 0 })
  })

  test("concurrent reports of the same totals count them once", async () => {
    const { a, b, server } = await setup()
    const report = [totals(b.publicKey, 70, 7), totals(a.publicKey, 900, 9)]
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => send("counters", server, i % 2 === 0 ? report : [...report].reverse())))
    expect(answers.every((r) => r.status === 200 && r.body.data.accepted === 2)).toBe(true)
    expect(await usageOf(a.serviceId)).toEqual({ rx: 900, tx: 9 })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 70, tx: 7 })
  }, 30_000)

  test("422 before saving anything when a stored total would pass 2^53 - 1 ([D54] rev. 2)", async () => {
    const { a, b, server } = await setup()
    await setUsage(app, a.serviceId, month(), MAX - 100)
    const res = await send("counters", server, [totals(b.publicKey, 10, 0), totals(a.publicKey, 60, 41)])
    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      success: false,
      message: "The given data was invalid.",
      errors: { "1.tx_total": [`The 1.tx_total field would carry the usage total past ${MAX} bytes.`] }
    })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 0, tx: 0 })
    // the refused totals were not kept: the next report of each peer is its first
    const fits = await send("counters", server, [totals(b.publicKey, 10, 0), totals(a.publicKey, 60, 40)])
    expect(fits.body).toEqual({ success: true, data: { accepted: 2 } })
    expect(await usageOf(b.serviceId)).toEqual({ rx: 10, tx: 0 })
    expect(await usageOf(a.serviceId)).toEqual({ rx: MAX - 40, tx: 40 })
  })

  test("422: field errors like the usage route, a peer twice in one report, a bad key", async () => {
    const { a, server, username } = await setup()
    const bad = await send(
      "counters",
      server,
      [
        { public_key: a.publicKey, rx_total: -1, tx_total: 1.5 },
        { rx_total: 1, tx_total: 1 },
        { public_key: a.publicKey, tx_total: "3" },
        7,
        { username, rx_total: 1, tx_total: 1 },
        { username, rx_total: 2, tx_total: 2 },
        { public_key: a.publicKey, rx_total: MAX + 1, tx_total: 0 }
      ],
      ""
    )
    expect(bad.status).toBe(422)
    expect(bad.body.errors).toEqual({
      idempotency_key: ["The idempotency key must be between 1 and 255 visible ASCII characters."],
      "0.rx_total": ["The 0.rx_total field must be at least 0."],
      "0.tx_total": ["The 0.tx_total field must be an integer."],
      "1.public_key": ["The 1.public_key field is required when 1.username is not present."],
      "2.public_key": ["The 2.public_key field has a duplicate value."],
      "2.rx_total": ["The 2.rx_total field is required."],
      "2.tx_total": ["The 2.tx_total field must be an integer."],
      "3": ["The 3 field must be an object."],
      "5.username": ["The 5.username field has a duplicate value."],
      "6.public_key": ["The 6.public_key field has a duplicate value."],
      "6.rx_total": [`The 6.rx_total field must not be greater than ${MAX}.`]
    })
    const obj = await send("counters", server, { public_key: a.publicKey, rx_total: 1, tx_total: 1 })
    expect(obj.status).toBe(422)
    expect(obj.body.errors).toEqual({ body: ["The body must be a JSON array."] })
    expect(await usageOf(a.serviceId)).toEqual({ rx: 0, tx: 0 })
    expect((await send("counters", server, [])).body).toEqual({ success: true, data: { accepted: 0 } })
  })

  test("a node token only: no token, a user token or another string is 401", async () => {
    const { a } = await setup()
    for (const token of [undefined, a.user.token, "node_nope"]) {
      const res = await app.post("/v1/node/counters", { ...(token !== undefined ? { token } : {}), body: [] })
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
    }
  })
})

test("the OpenAPI document shows both reports with their Idempotency-Key header [D94]", async () => {
  const doc = await app.get("/v1/openapi.json")
  for (const path of ["/v1/node/usage", "/v1/node/counters"]) {
    const op = doc.body.paths[path].post
    expect(op.parameters.filter((p: { in: string }) => p.in === "header").map((p: { name: string }) => p.name)).toEqual(["idempotency-key"])
    expect(op.responses["200"]).toBeDefined()
    expect(op.responses["422"]).toBeDefined()
  }
})

// ---- properties ----------------------------------------------------------------------------

const PEERS = 3
/**
 * The three peers of a property run: A's two WireGuard keys (two devices of service A), B's key
 * (service B). [D116]: one node serves one protocol, so a usable report names keys only.
 */
const propertyWorld = async () => {
  const w = await setup()
  const me = await typedClient(app, { token: w.a.user.token })
  const device = await ok(me.vpn.createDevice({ payload: { name: "Laptop", platform: "linux" } }))
  expect(await ok(me.vpn.deviceWireguard({ path: { device: device.id, server: w.server.id } }))).toContain("[Interface]")
  const [second] = await app.sql<{ public_key: string }>`
    select public_key from wireguard_peers where device_id = ${device.id} and server_id = ${w.server.id}`
  const entryOf = (peer: number): Record<string, string> =>
    peer === 0 ? { public_key: w.a.publicKey } : peer === 1 ? { public_key: second!.public_key } : { public_key: w.b.publicKey }
  const serviceOf = (peer: number) => (peer === 2 ? w.b.serviceId : w.a.serviceId)
  return { ...w, entryOf, serviceOf }
}

let runs = 0

describe("properties [D94]", () => {
  test("deltas: any number of retries of each keyed report, in any order and concurrently, add it once", async () => {
    const report = fc.record({
      entries: fc.array(fc.record({ peer: fc.nat(PEERS - 1), rx: fc.nat(1_000_000), tx: fc.nat(1_000_000) }), { maxLength: 4 }),
      // 0: the report was lost; more: retried under its key
      copies: fc.nat(4)
    })
    await fc.assert(
      fc.asyncProperty(fc.array(report, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { minLength: 40, maxLength: 40 }), async (reports, order) => {
        const w = await propertyWorld()
        const run = ++runs
        const deliveries = reports
          .flatMap((r, i) => Array.from({ length: r.copies }, () => i))
          .map((i, j) => ({ i, rank: order[j % order.length]! * 64 + j }))
          .sort((x, y) => x.rank - y.rank)
        const answers = new Map<number, Set<string>>()
        for (let start = 0; start < deliveries.length; start += 3) {
          const batch = deliveries.slice(start, start + 3)
          const responses = await Promise.all(
            batch.map(({ i }) =>
              send(
                "usage",
                w.server,
                reports[i]!.entries.map((e) => ({ ...w.entryOf(e.peer), rx_bytes: e.rx, tx_bytes: e.tx })),
                `run${run}-report${i}`
              )
            )
          )
          responses.forEach((res, k) => {
            expect(res.status).toBe(200)
            const seen = answers.get(batch[k]!.i) ?? new Set<string>()
            answers.set(batch[k]!.i, seen.add(JSON.stringify(res.body)))
          })
        }
        // every retry of a report answered as its first delivery did
        for (const seen of answers.values()) expect(seen.size).toBe(1)
        const expected = new Map<number, { rx: number; tx: number }>([
          [w.a.serviceId, { rx: 0, tx: 0 }],
          [w.b.serviceId, { rx: 0, tx: 0 }]
        ])
        for (const r of reports) {
          if (r.copies === 0) continue
          for (const e of r.entries) {
            const sum = expected.get(w.serviceOf(e.peer))!
            sum.rx += e.rx
            sum.tx += e.tx
          }
        }
        expect(await usageOf(w.a.serviceId)).toEqual(expected.get(w.a.serviceId)!)
        expect(await usageOf(w.b.serviceId)).toEqual(expected.get(w.b.serviceId)!)
      }),
      { numRuns: 25 }
    )
  }, 120_000)

  /**
   * The model. Each peer has a true traffic (every byte it moved) and, on the node, counters
   * since their last reset. A report is a snapshot of the counters of some peers, sent one at a
   * time as the node agent does: lost (never arrives), sent once, or retried. A keyed report's
   * retries may arrive after later reports (reordered); an unkeyed one is repeated at once. A
   * stale snapshot arriving after a newer one without its key is outside the model: with
   * cumulative counters it cannot be told from a reset; the agent retries a report under its key
   * until it is answered and sends the next only then.
   *
   * What the server can observe of a peer is, per counter epoch (between resets), the last
   * delivered snapshot of that epoch: traffic after it and before the reset was never reported.
   * Claims: the stored usage never exceeds the true traffic; repeats and retries add nothing;
   * when every reset is visible (the first report after it carries a total below the last one
   * delivered, in rx or tx), stored usage equals exactly what was reported, so a reset loses only
   * what the node never reported and a lost report loses nothing the next one carries; with no
   * reset and the last report delivered, stored usage is the true traffic.
   */
  test("counters: losses, repeats, reordered retries and resets count the observed traffic, never more than the truth", async () => {
    const step = fc.oneof(
      { weight: 6, arbitrary: fc.record({ type: fc.constant("traffic" as const), peer: fc.nat(PEERS - 1), rx: fc.nat(5000), tx: fc.nat(5000) }) },
      { weight: 1, arbitrary: fc.record({ type: fc.constant("reset" as const), peer: fc.nat(PEERS - 1) }) },
      {
        weight: 4,
        arbitrary: fc.record({
          type: fc.constant("report" as const),
          peers: fc.subarray([0, 1, 2], { minLength: 1 }),
          reversed: fc.boolean(),
          copies: fc.nat(3),
          keyed: fc.boolean(),
          lateBy: fc.nat(3)
        })
      }
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 10, maxLength: 30 }), fc.boolean(), async (steps, finalReport) => {
        const w = await propertyWorld()
        const run = ++runs
        const truth = Array.from({ length: PEERS }, () => ({ rx: 0, tx: 0 }))
        const counters = Array.from({ length: PEERS }, () => ({ rx: 0, tx: 0 }))
        const epoch = Array.from({ length: PEERS }, () => 0)
        // per peer: the totals the server last received, and per epoch the last delivered snapshot
        const lastDelivered: Array<{ rx: number; tx: number } | undefined> = Array.from({ length: PEERS }, () => undefined)
        const reported = Array.from({ length: PEERS }, () => new Map<number, { rx: number; tx: number }>())
        let resets = 0
        const invisible = Array.from({ length: PEERS }, () => 0)
        const late: Array<{ due: number; body: unknown; key: string }> = []
        let reportNo = 0

        const deliver = async (body: unknown, key?: string) => {
          const res = await send("counters", w.server, body, key)
          expect(res.status).toBe(200)
        }
        const report = async (peers: ReadonlyArray<number>, copies: number, keyed: boolean, lateBy: number, reversed: boolean) => {
          const n = ++reportNo
          for (const due of late.filter((l) => l.due <= n)) await deliver(due.body, due.key)
          late.splice(0, late.length, ...late.filter((l) => l.due > n))
          if (copies === 0) return
          const ordered = reversed ? [...peers].reverse() : peers
          const body = ordered.map((p) => ({ ...w.entryOf(p), rx_total: counters[p]!.rx, tx_total: counters[p]!.tx }))
          const key = keyed ? `run${run}-counters${n}` : undefined
          await deliver(body, key)
          for (const p of peers) {
            const before = lastDelivered[p]
            const now = { ...counters[p]! }
            const grew = before === undefined || (now.rx >= before.rx && now.tx >= before.tx)
            const atEpochStart = !reported[p]!.has(epoch[p]!) && epoch[p]! > 0
            if (atEpochStart && grew && before !== undefined && (before.rx > 0 || before.tx > 0)) invisible[p] = invisible[p]! + 1
            lastDelivered[p] = now
            reported[p]!.set(epoch[p]!, now)
          }
          for (let c = 1; c < copies; c++) {
            if (keyed && lateBy > 0) late.push({ due: n + lateBy, body, key: key! })
            else await deliver(body, key)
          }
        }

        for (const s of steps) {
          if (s.type === "traffic") {
            truth[s.peer]!.rx += s.rx
            truth[s.peer]!.tx += s.tx
            counters[s.peer]!.rx += s.rx
            counters[s.peer]!.tx += s.tx
          } else if (s.type === "reset") {
            counters[s.peer] = { rx: 0, tx: 0 }
            epoch[s.peer] = epoch[s.peer]! + 1
            resets++
          } else {
            await report(s.peers, s.copies, s.keyed, s.lateBy, s.reversed)
          }
        }
        if (finalReport) await report([0, 1, 2], 1, true, 0, false)
        for (const l of late) await deliver(l.body, l.key)

        const sum = (peers: ReadonlyArray<number>, of: (p: number) => { rx: number; tx: number }) =>
          peers.reduce((t, p) => ({ rx: t.rx + of(p).rx, tx: t.tx + of(p).tx }), { rx: 0, tx: 0 })
        const observed = (p: number) => sum([...reported[p]!.keys()], (e) => reported[p]!.get(e)!)
        const stored = { a: await usageOf(w.a.serviceId), b: await usageOf(w.b.serviceId) }
        const truthOf = { a: sum([0, 1], (p) => truth[p]!), b: truth[2]! }
        const observedOf = { a: sum([0, 1], observed), b: observed(2) }
        const invisibleOf = { a: invisible[0]! + invisible[1]!, b: invisible[2]! }
        for (const s of ["a", "b"] as const) {
          // never more than the truth, nor than what was reported
          expect(stored[s].rx).toBeLessThanOrEqual(truthOf[s].rx)
          expect(stored[s].tx).toBeLessThanOrEqual(truthOf[s].tx)
          expect(stored[s].rx).toBeLessThanOrEqual(observedOf[s].rx)
          expect(stored[s].tx).toBeLessThanOrEqual(observedOf[s].tx)
          if (invisibleOf[s] === 0) expect(stored[s]).toEqual(observedOf[s])
          if (resets === 0 && finalReport) expect(stored[s]).toEqual(truthOf[s])
        }
      }),
      { numRuns: 25 }
    )
  }, 180_000)
})
