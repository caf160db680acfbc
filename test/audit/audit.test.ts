import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { loadOperations, type Operation } from "../reliability/openapi.ts"
import { seedWorld, type World } from "../reliability/world.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D100] the audit log: one row per admin write on every admin route, never a secret, append-only,
// filtered for admins.
let app: TestApp
let world: World
let operations: ReadonlyArray<Operation>
beforeAll(async () => {
  app = await makeTestApp()
  world = await seedWorld(app)
  operations = (await loadOperations(app)).operations
}, 60_000)
afterAll(() => app.dispose())

interface AuditRow {
  id: string
  action: string
  resource: string | null
  actor_id: number | null
  actor_kind: string
  subject_id: number | null
  ip: string | null
  user_agent: string | null
  row: string
}
const rowsOf = (action: string) =>
  app.sql<AuditRow>`select id::text as id, action, resource, actor_id, actor_kind, subject_id, ip, user_agent, row_to_json(a)::text as row
    from audit_log a where action = ${action} order by id`

/** A valid body and the ids of each admin write, in the order they are walked (a key of its own per route). */
const writes = (w: World): Record<string, { readonly values: Record<string, string>; readonly body?: unknown }> => ({
  "POST /v1/admin/webhooks": { values: {}, body: { url: "https://hooks.example.com/audit", events: ["ticket.replied"] } },
  "POST /v1/admin/plans": {
    values: {},
    body: { name: "Audit Plan", description: "audit", bandwidth_limit_gb: 100, speed_limit_mbps: null, trial_days: 0, is_active: true }
  },
  "PUT /v1/admin/plans/{plan}": { values: { plan: String(w.b.planId) }, body: { description: "audited" } },
  "POST /v1/admin/plans/{plan}/cycles": { values: { plan: String(w.b.planId) }, body: { name: "Yearly", duration_days: 365, price: "99.00", currency: "USD" } },
  "POST /v1/admin/promos": { values: {}, body: { code: "AUDIT10", type: "fixed", value: 10 } },
  "POST /v1/admin/servers": {
    values: {},
    body: { name: "Audit WG", country: "NL", city: "Amsterdam", protocol: "wireguard", ip: "203.0.113.77", plan_ids: [w.b.planId] }
  },
  "PUT /v1/admin/servers/{server}": { values: { server: String(w.servers.bWireguard.id) }, body: { name: "Renamed" } },
  "POST /v1/admin/users/{user}/invoices": { values: { user: String(w.b.id) }, body: { plan_id: w.b.planId, cycle_id: w.b.cycleId } },
  "POST /v1/admin/invoices/{invoice}/mark-paid": { values: { invoice: w.b.invoiceUuids[0]! } },
  "POST /v1/admin/invoices/{invoice}/refund": { values: { invoice: w.b.invoiceUuids[0]! }, body: { amount: "1.00", to: "balance", reason: "Audited refund" } },
  "POST /v1/admin/users/{user}/balance": { values: { user: String(w.b.id) }, body: { amount: "5.00", currency: "USD", reason: "Goodwill" } },
  "POST /v1/admin/services/{service}/usage": { values: { service: String(w.b.serviceId) }, body: { bytes: 1000 } },
  "POST /v1/admin/tickets/{ticket}/reply": { values: { ticket: String(w.b.ticketId) }, body: { message: "Staff here." } },
  "POST /v1/admin/faq": { values: {}, body: { question: "Audited?", answer: "Yes." } },
  "PUT /v1/admin/users/{user}": { values: { user: String(w.b.id) }, body: { status: 1 } },
  "PUT /v1/admin/services/{service}": { values: { service: String(w.b.serviceId) }, body: { status: "cancelled" } },
  "POST /v1/admin/users/{user}/services": { values: { user: String(w.a.id) }, body: { plan_id: w.a.planId, cycle_id: w.a.cycleId } },
  // [D101]: the endpoint made first (id 1 on a fresh database) gets delivery 1 from the walk's ticket reply
  "PUT /v1/admin/webhooks/{id}": { values: { id: "1" }, body: { description: "audited" } },
  "POST /v1/admin/webhooks/{id}/deliveries/{delivery}/redeliver": { values: { id: "1", delivery: "1" } },
  "DELETE /v1/admin/webhooks/{id}": { values: { id: "1" } }
})

const fill = (path: string, values: Record<string, string>) => path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? "1")

describe("one row per admin write [D100]", () => {
  test("every admin route other than GET, walked from the OpenAPI document, appends exactly one row once it succeeded", async () => {
    const admin = world.admin
    const staff = await typedClient(app, { token: admin.token })
    // the declared 201 answer
    const key = await ok(staff.accounts.createApiKey({ payload: { name: "ops bot", scopes: ["admin:write"] } }))
    const known = writes(world)
    const routes = operations.filter((op) => op.kind === "admin" && op.method !== "GET" && op.method !== "HEAD")
    const unknown = routes.map((op) => `${op.method} ${op.path}`).filter((name) => !(name in known))
    // a new admin write route needs a body here: the walk must cover it
    expect(unknown).toEqual([])
    expect(routes.length).toBe(Object.keys(known).length)
    let viaKey = true
    for (const [name, { values, body }] of Object.entries(known)) {
      const [method, path] = name.split(" ") as [string, string]
      const action = `${method} ${path.replace(/\{(\w+)\}/g, ":$1")}`
      const url = fill(path, values)
      // refused attempts are no writes: a user's token (403), none (401)
      expect((await app.request(method, url, { token: world.a.token, body })).status).toBe(403)
      expect((await app.request(method, url, { body })).status).toBe(401)
      expect(await rowsOf(action)).toEqual([])
      const token = viaKey ? key.key : admin.token
      const res = await app.request(method, url, { token, body, headers: { "x-forwarded-for": "198.51.100.9", "user-agent": "Audit/1.0" } })
      expect(`${name} ${res.status}`).toBe(`${name} ${res.status >= 200 && res.status < 300 ? res.status : "2xx"}`)
      const rows = await rowsOf(action)
      expect(rows.length).toBe(1)
      const row = rows[0]!
      expect(row).toMatchObject({ actor_id: admin.id, actor_kind: viaKey ? "api_key" : "token", ip: "198.51.100.9", user_agent: "Audit/1.0", subject_id: null })
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
      if (params.length > 0) {
        const last = params[params.length - 1]!
        expect(row.resource).toBe(`${last}:${values[last]}`)
      } else {
        expect(row.resource).toMatch(/^[a-z_]+:\S+$/)
        const created = res.body?.data?.id ?? res.body?.data?.uuid
        expect(row.resource!.split(":")[1]).toBe(String(created))
      }
      // no body, no secret: a created server's node token is in the answer, not in the log
      if (typeof res.body?.data?.node_token === "string") expect(row.row).not.toContain(res.body.data.node_token)
      // nor a webhook's signing secret ([D101])
      if (typeof res.body?.data?.secret === "string") expect(row.row).not.toContain(res.body.data.secret)
      expect(row.row).not.toContain(key.key)
      viaKey = !viaKey
    }
    // an admin write that fails (422) leaves no row
    const before = (await app.sql`select id from audit_log`).length
    expect((await app.post("/v1/admin/promos", { token: admin.token, body: {} })).status).toBe(422)
    expect((await app.sql`select id from audit_log`).length).toBe(before)
  }, 60_000)

  test("the table refuses UPDATE and DELETE (append-only)", async () => {
    const staff = await typedClient(app, { token: world.admin.token })
    await ok(staff.supportAdmin.createFaq({ payload: { question: "Q", answer: "A" } }))
    await expect(app.sql`update audit_log set action = 'rewritten'`).rejects.toThrow()
    await expect(app.sql`delete from audit_log`).rejects.toThrow()
    expect((await app.sql`select id from audit_log where action = 'rewritten'`).length).toBe(0)
  })
})

describe("GET /v1/admin/audit [D100]", () => {
  test("filters by actor, action, resource, from, to; newest first; paginated; admins only", async () => {
    const admin = world.admin
    const staff = await typedClient(app, { token: admin.token })
    app.clock.advance(60_000)
    const t0 = app.clock.get()
    app.clock.advance(60_000)
    const plan = await ok(staff.catalogAdmin.updatePlan({ path: { plan: world.a.planId }, payload: { description: "filtered" } }))
    expect(plan.description).toBe("filtered")
    app.clock.advance(60_000)
    const t1 = app.clock.get()
    app.clock.advance(60_000)
    expect<number>((await ok(staff.accountsAdmin.updateUser({ path: { user: world.a.id }, payload: { status: 1 } }))).id).toBe(world.a.id)

    const byAction = await app.get(`/v1/admin/audit?action=${encodeURIComponent("PUT /v1/admin/plans/:plan")}&resource=plan:${world.a.planId}`, {
      token: admin.token
    })
    expect(byAction.status).toBe(200)
    expect(byAction.body.data.length).toBe(1)
    expect(Object.keys(byAction.body.data[0]).sort()).toEqual([
      "action",
      "actor_id",
      "actor_kind",
      "created_at",
      "id",
      "ip",
      "resource",
      "subject_id",
      "user_agent"
    ])
    expect(byAction.body.data[0]).toMatchObject({ action: "PUT /v1/admin/plans/:plan", resource: `plan:${world.a.planId}`, actor_id: admin.id })
    // the bare id also finds the resource
    const byId = await ok(staff.auditAdmin.search({ urlParams: { resource: String(world.a.planId), action: "PUT /v1/admin/plans/:plan" } }))
    expect(byId.data.map((r) => r.id)).toEqual(byAction.body.data.map((r: { id: number }) => r.id))

    const window = await ok(staff.auditAdmin.search({ urlParams: { actor: admin.id, from: t0, to: t1 } }))
    expect(window.data.map((r) => r.action)).toEqual(["PUT /v1/admin/plans/:plan"])
    expect(window.links.first).toContain(`actor=${admin.id}`)

    const all = await ok(staff.auditAdmin.search({ urlParams: { actor: admin.id } }))
    expect(all.data[0]?.action).toBe("PUT /v1/admin/users/:user")
    expect(all.meta.per_page).toBe(15)
    expect(all.meta.total).toBeGreaterThan(15)
    const page2 = await ok(staff.auditAdmin.search({ urlParams: { actor: admin.id, page: 2 } }))
    expect(page2.meta.current_page).toBe(2)
    expect(page2.data[0]!.id).toBeLessThan(all.data[14]!.id)

    // a user's security events are there too, with the user as subject
    const events = await ok(staff.auditAdmin.search({ urlParams: { action: "api_key_created" } }))
    expect(events.data[0]).toMatchObject({ action: "api_key_created", subject_id: admin.id, actor_kind: "token" })

    for (const bad of ["actor=abc", "from=yesterday", "to=2026-13-45", "page=0"]) {
      const res = await app.get(`/v1/admin/audit?${bad}`, { token: admin.token })
      expect(`${bad} ${res.status}`).toBe(`${bad} 422`)
      expect(Object.keys(res.body.errors)).toEqual([bad.split("=")[0]!])
    }
    expect((await app.get("/v1/admin/audit", { token: world.a.token })).status).toBe(403)
    expect((await app.get("/v1/admin/audit")).status).toBe(401)
  }, 30_000)
})
