/**
 * The contract, generated from the document a fresh server serves (issue 28): the document is
 * valid for strict tools (Redocly `recommended` with zero errors, a strict OpenAPI 3.1 validator),
 * and for every operation a request built from its own schemas is answered with a status the
 * document declares, in the shape it declares; then the error variations: no credential (401),
 * an unknown id (404) and each required field left out (422 naming that field).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Validator } from "@seriousme/openapi-schema-validator"
import Ajv2020 from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Secret, TOTP } from "otpauth"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { waitForStatus } from "../support/process.ts"
import { isObject, type Json, makeResponseValidator, type Operation, operationsOf, propertiesOf, requiredFields, sampleBody } from "./document.ts"

const dir = mkdtempSync(join(tmpdir(), "vpn-contract-"))
const port = 20000 + Math.floor(Math.random() * 20000)
const base = `http://127.0.0.1:${port}`
const ADMIN = { email: "contract-admin@example.test", password: "Contract-admin-pass-1" }
const PASSWORD = "Contract-user-pass-1"
let server: ReturnType<typeof Bun.spawn> | undefined
let doc: Json = {}
let seq = 0

/** each request from its own address, so the per-address limits never answer for the shape */
const call = async (method: string, path: string, options: { token?: string; body?: unknown } = {}) => {
  seq += 1
  const res = await fetch(base + path, {
    method,
    headers: {
      "x-forwarded-for": `10.${(seq >> 16) & 255}.${(seq >> 8) & 255}.${seq & 255}`,
      ...(options.token !== undefined ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.body !== undefined ? { "content-type": "application/json" } : {})
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {})
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // a download
  }
  return { status: res.status, type: res.headers.get("content-type") ?? "", headers: res.headers, body }
}

const data = (res: { body: unknown }): Json => {
  const body = res.body
  if (isObject(body) && isObject(body["data"])) return body["data"]
  throw new Error(`no data in ${JSON.stringify(body).slice(0, 300)}`)
}

const fixtures: Record<string, string> = {}
const tokens = { user: "", admin: "", node: "" }
let userEmail = ""

const randomKey = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")

beforeAll(async () => {
  server = Bun.spawn([process.execPath, "run", "src/main.ts"], {
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: join(dir, "data"),
      LOG_LEVEL: "error",
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      TRUST_PROXY: "1",
      GENERAL_RATE_LIMIT: "0",
      WEBHOOKS_ALLOW_PRIVATE: "true",
      PAYMENT_WEBHOOK_SECRET: "contract-secret"
    },
    stdout: "ignore",
    stderr: "ignore"
  })
  await waitForStatus(port, 480) // up to 2 min: a fresh embedded database on a busy machine
  doc = (await call("GET", "/v1/openapi.json")).body as Json

  tokens.admin = String(data(await call("POST", "/v1/auth/login", { body: ADMIN }))["token"])
  const admin = tokens.admin
  const plan = data(
    await call("POST", "/v1/admin/plans", {
      token: admin,
      body: { name: "Contract", description: "c", bandwidth_limit_gb: 100, speed_limit_mbps: null, trial_days: 0, is_active: true }
    })
  )
  fixtures["plan"] = String(plan["id"])
  const cycle = data(
    await call("POST", `/v1/admin/plans/${plan["id"]}/cycles`, {
      token: admin,
      body: { name: "Monthly", duration_days: 30, price: "9.99", currency: "USD" }
    })
  )
  fixtures["cycle"] = String(cycle["id"])
  const vpnServer = data(
    await call("POST", "/v1/admin/servers", {
      token: admin,
      body: {
        name: "Contract 1",
        country: "NL",
        city: "Lab",
        protocol: "wireguard",
        ip: "10.9.8.7",
        port: 51820,
        public_key: randomKey(),
        plan_ids: [plan["id"]]
      }
    })
  )
  fixtures["server"] = String(vpnServer["id"])
  tokens.node = String(vpnServer["node_token"])

  userEmail = "contract-user@example.test"
  const registered = data(
    await call("POST", "/v1/auth/register", {
      body: { name: "Contract User", email: userEmail, password: PASSWORD, password_confirmation: PASSWORD }
    })
  )
  tokens.user = String(registered["token"])
  fixtures["user"] = String((registered["user"] as Json)["id"])
  const invoice = data(
    await call("POST", "/v1/orders", {
      token: tokens.user,
      body: { plan_id: plan["id"], cycle_id: cycle["id"] }
    })
  )
  fixtures["invoice"] = String(invoice["uuid"])
  await call("POST", `/v1/admin/invoices/${invoice["uuid"]}/mark-paid`, { token: admin })
  fixtures["service"] = String(data(await call("GET", "/v1/services/current", { token: tokens.user }))["id"])
  fixtures["device"] = String(data(await call("POST", "/v1/devices", { token: tokens.user, body: { name: "Laptop", platform: "linux" } }))["id"])
  fixtures["ticket"] = String(data(await call("POST", "/v1/tickets", { token: tokens.user, body: { subject: "Hi", message: "Hello" } }))["id"])
  fixtures["key"] = String(
    data(
      await call("POST", "/v1/account/api-keys", {
        token: tokens.user,
        body: { name: "ci", scopes: ["read"] }
      })
    )["id"]
  )
  const sessions = (await call("GET", "/v1/account/sessions", { token: tokens.user })).body as Json
  fixtures["session"] = String((sessions["data"] as Array<Json>)[0]!["id"])
  fixtures["id"] = String(
    data(
      await call("POST", "/v1/admin/webhooks", {
        token: admin,
        body: { url: "http://127.0.0.1:9/hook", events: ["invoice.paid"] }
      })
    )["id"]
  )
  fixtures["delivery"] = "1"
  fixtures["gateway"] = "manual"
}, 240_000)

afterAll(() => {
  server?.kill("SIGTERM")
  rmSync(dir, { recursive: true, force: true })
})

/** Values a sampled body cannot guess: the fixtures' ids and fields with a meaning. */
const overlay = (op: Operation, sampled: unknown): unknown => {
  // the node reports are arrays of entries: one entry naming the fixture server's peer is enough
  if (Array.isArray(sampled)) return []
  if (!isObject(sampled)) return sampled
  const out: Json = { ...sampled }
  const set = (key: string, value: unknown) => {
    if (key in out) out[key] = value
  }
  set("plan_id", Number(fixtures["plan"]))
  set("cycle_id", Number(fixtures["cycle"]))
  set("plan_ids", [Number(fixtures["plan"])])
  set("email", ["accounts.login", "accounts.createSession", "accounts.forgotPassword"].includes(op.id) ? userEmail : `new-${seq}@example.test`)
  set("password", PASSWORD)
  set("password_confirmation", PASSWORD)
  set("current_password", PASSWORD)
  set("public_key", randomKey())
  set("ip", "10.9.8.6")
  set("url", "http://127.0.0.1:9/other")
  set("events", ["invoice.paid"])
  set("scopes", ["read"])
  set("currency", "USD")
  set("price", "4.99")
  set("starts_at", "2026-01-01T00:00:00Z")
  set("expires_at", "2030-01-01T00:00:00Z")
  // a WireGuard server has no CA; an OpenVPN one needs a real PEM, which a sample is not
  delete out["ca_cert"]
  if (op.id === "accountsAdmin.updateUser") Object.assign(out, { status: 1, role: "user" })
  if (op.id === "servicesAdmin.updateService") out["status"] = "active"
  return out
}

/** the query parameters of an operation, required or not */
const queryParams = (op: Operation, required: boolean) =>
  (Array.isArray(op.op["parameters"]) ? op.op["parameters"] : [])
    .filter((p): p is Json => isObject(p) && p["in"] === "query" && (p["required"] === true) === required)
    .map((p) => String(p["name"]))

/** the path with its ids, and the required query parameters (issue 34: `plan_id`, `cycle_id` of a quote) */
const pathOf = (op: Operation, ids: Record<string, string>) => {
  const path = op.path.replace(/\{([a-z]+)\}/g, (_, name: string) => ids[name] ?? "1")
  const query = queryParams(op, true).map((name) => `${name}=${fixtures[name.replace(/_id$/, "")] ?? "1"}`)
  return query.length === 0 ? path : `${path}?${query.join("&")}`
}

const tokenFor = (op: Operation) => {
  if (op.credentials.includes("nodeToken")) return tokens.node
  if (op.credentials.includes("userToken")) return op.path.startsWith("/v1/admin/") ? tokens.admin : tokens.user
  return undefined
}

/** what ends a session or the account runs last, in this order */
const LAST = [
  "accounts.revokeApiKey",
  "accounts.revokeSession",
  "vpn.deleteDevice",
  "webhooksAdmin.deleteWebhook",
  "vpn.revokeVpnAccess",
  "accounts.changePassword",
  "accounts.logoutAll",
  "accounts.logout",
  "accounts.deleteAccount"
]

/**
 * A 422 that the state of this server explains, not the request's shape (each with its reason).
 * A 422 not listed here, for a request the document calls valid, fails the test.
 */
const STATE_MESSAGES: Record<string, string> = {
  "catalog.validatePromo": "Invalid or expired promo code.", // no such code on this server
  "billing.placeOrder": "Invalid or expired promo code.",
  "billingAdmin.createInvoice": "Invalid or expired promo code.",
  "billing.paymentUrl": "Invoice is not payable.", // the fixture invoice is paid
  "billing.cancelInvoice": "Invoice is not payable.",
  "vpn.createDevice": "Device limit reached.", // the plan's devices are all made
  "subscriptions.cancelService": "Service cannot be cancelled.", // [D111]: the fixture service may be cancelled already
  "subscriptions.resumeService": "Service cannot be resumed.", // not cancelling at the period's end
  "subscriptions.changePlan": "Service cannot be changed.",
  "subscriptions.changeQuote": "Service cannot be changed.",
  "refundsAdmin.refundInvoice": "Invoice is not refundable."
}
const STATE_422: Record<string, ReadonlyArray<string>> = {
  "accounts.resetPassword": ["token"], // no e-mailed token: a made-up one is refused
  "accounts.verifyEmail": ["token"],
  "accounts.confirmTwoFactor": ["code"], // the sampled code is not the current TOTP code
  "accounts.disableTwoFactor": ["two_factor", "code"], // two-factor sign-in is off
  "catalog.validatePromo": ["promo_code", "code"], // no such promo code
  "billing.placeOrder": ["promo_code"],
  "subscriptions.changePlan": ["plan_id", "cycle_id"], // [D108]: the sample may be the fixture service's own plan and cycle, or a cycle of another plan
  "subscriptions.changeQuote": ["plan_id", "cycle_id"],
  "refundsAdmin.refundInvoice": ["amount", "to"] // [D110]: the fixture invoice may be refunded already, or paid through `manual`
}

/** a route with its own per-user limit ([D30]): its variations may use it up (429, declared) */
const routeLimited = (op: Operation) => {
  const tooMany = (op.op["responses"] as Json)["429"]
  return isObject(tooMany) && isObject(tooMany["headers"]) && "X-RateLimit-Limit" in tooMany["headers"]
}

/** issue 34: the headers a client may act on, each declared on the answer that carries it */
const WATCHED_HEADERS = ["cache-control", "content-disposition", "x-ratelimit-limit", "x-ratelimit-remaining", "retry-after", "allow"]

const undeclaredHeaders = (op: Operation, res: { status: number; headers?: Headers }) => {
  const declared = (op.op["responses"] as Json)[String(res.status)]
  const names = isObject(declared) && isObject(declared["headers"]) ? Object.keys(declared["headers"]).map((h) => h.toLowerCase()) : []
  return WATCHED_HEADERS.filter((h) => res.headers?.has(h) === true && !names.includes(h))
}

const checkAnswer = (
  validate: ReturnType<typeof makeResponseValidator>,
  op: Operation,
  res: { status: number; type: string; headers?: Headers; body: unknown }
) => {
  const problems = validate(op.op, res.status, res.type, res.body)
  if (problems === undefined) return [`status ${res.status} is not declared: ${JSON.stringify(res.body).slice(0, 200)}`]
  const headers = undeclaredHeaders(op, res).map((h) => `status ${res.status}: header ${h} sent but not declared`)
  return [...problems.map((p) => `status ${res.status}: ${p}`), ...headers]
}

describe("the OpenAPI document", () => {
  test("a strict OpenAPI 3.1 validator accepts it", async () => {
    const result = await new Validator().validate(doc as never)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(doc["openapi"]).toStartWith("3.1")
  })

  test("Redocly lint (recommended) reports zero errors", () => {
    const file = join(dir, "openapi.json")
    writeFileSync(file, JSON.stringify(doc))
    const run = Bun.spawnSync(["node", "node_modules/@redocly/cli/bin/cli.js", "lint", file, "--extends", "recommended", "--format", "json"], {
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" }
    })
    const out = run.stdout.toString()
    const report = JSON.parse(out.slice(out.indexOf("{"))) as { totals: { errors: number }; problems: Array<Json> }
    const errors = report.problems.filter((p) => p["severity"] === "error").map((p) => `${p["ruleId"]}: ${p["message"]}`)
    expect(errors).toEqual([])
    expect(report.totals.errors).toBe(0)
  }, 60_000)

  test("every operation has a summary, a description and its credentials named", () => {
    const ops = operationsOf(doc)
    expect(ops.length).toBeGreaterThan(90)
    for (const op of ops) {
      expect(typeof op.op["summary"], op.id).toBe("string")
      expect(typeof op.op["description"], op.id).toBe("string")
    }
    const schemes = Object.keys((doc["components"] as Json)["securitySchemes"] as Json).sort()
    expect(schemes).toEqual(["apiKey", "nodeToken", "sessionCookie", "userToken"])
  })
})

/** One request the document calls valid: answered as declared and never refused for its shape. */
const sendValid = async (op: Operation, validate: ReturnType<typeof makeResponseValidator>, failures: Array<string>, example?: unknown) => {
  const body = example !== undefined ? example : op.bodySchema !== undefined ? overlay(op, sampleBody(doc, op.bodySchema)) : undefined
  const token = tokenFor(op)
  const res = await call(op.method, pathOf(op, fixtures), { ...(token !== undefined ? { token } : {}), ...(body !== undefined ? { body } : {}) })
  for (const problem of checkAnswer(validate, op, res)) failures.push(`${op.id} ${problem}`)
  if (res.status >= 500) failures.push(`${op.id} answered ${res.status}`)
  if (res.status === 422) {
    const errors = isObject(res.body) && isObject(res.body["errors"]) ? Object.keys(res.body["errors"]) : []
    // issue 34: a parameter the document calls optional is never what a 422 names
    const optional = errors.filter((field) => queryParams(op, false).includes(field))
    if (optional.length > 0) failures.push(`${op.id} refused the optional ${optional.join(", ")}: declare them required`)
    const message = isObject(res.body) ? res.body["message"] : undefined
    if (errors.length === 0 && message === STATE_MESSAGES[op.id]) return
    const explained = STATE_422[op.id] ?? []
    const unexplained = errors.filter((field) => !explained.includes(field))
    if (unexplained.length > 0 || errors.length === 0) {
      failures.push(`${op.id} refused a valid request: ${JSON.stringify(res.body).slice(0, 300)} for ${JSON.stringify(body)}`)
    }
  }
}

describe("requests generated from the document", () => {
  test("a request the document calls valid is answered as declared, never refused for its shape", async () => {
    const validate = makeResponseValidator(doc)
    const failures: Array<string> = []
    for (const op of operationsOf(doc)) {
      if (op.method === "HEAD" || op.id === "billing.paymentWebhook" || LAST.includes(op.id)) continue
      await sendValid(op, validate, failures)
    }
    expect(failures).toEqual([])
  }, 120_000)

  test("variations: no credential is 401, an unknown id is 404, each required field left out is 422 naming it", async () => {
    const validate = makeResponseValidator(doc)
    const failures: Array<string> = []
    const unknownIds: Record<string, string> = Object.fromEntries(
      Object.keys(fixtures).map((k) => [k, k === "invoice" ? "00000000-0000-4000-8000-000000000000" : "2147483646"])
    )
    for (const op of operationsOf(doc)) {
      if (op.method === "HEAD" || LAST.includes(op.id) || op.id === "billing.paymentWebhook") continue
      const token = tokenFor(op)
      const sampled = op.bodySchema !== undefined ? overlay(op, sampleBody(doc, op.bodySchema)) : undefined
      const withBody = sampled !== undefined ? { body: sampled } : {}
      if (token !== undefined) {
        const res = await call(op.method, pathOf(op, fixtures), withBody)
        if (res.status !== 401) failures.push(`${op.id} without a credential: ${res.status}`)
        failures.push(...checkAnswer(validate, op, res).map((p) => `${op.id} (no credential) ${p}`))
      }
      for (const param of op.pathParams.filter((p) => p !== "gateway")) {
        const res = await call(op.method, pathOf(op, { ...fixtures, [param]: unknownIds[param] ?? "2147483646" }), {
          ...(token !== undefined ? { token } : {}),
          ...withBody
        })
        if (res.status !== 404) failures.push(`${op.id} with an unknown ${param}: ${res.status}`)
        failures.push(...checkAnswer(validate, op, res).map((p) => `${op.id} (unknown ${param}) ${p}`))
      }
      if (op.bodySchema === undefined || !isObject(sampled)) continue
      for (const field of requiredFields(doc, op.bodySchema)) {
        const { [field]: _left, ...rest } = sampled
        const res = await call(op.method, pathOf(op, fixtures), { ...(token !== undefined ? { token } : {}), body: rest })
        const errors = isObject(res.body) && isObject(res.body["errors"]) ? Object.keys(res.body["errors"]) : []
        // a missing confirmation reads as the mismatch, under `password` ([D12])
        const expected = field === "password_confirmation" ? "password" : field
        if (routeLimited(op) && res.status === 429) continue
        if (res.status !== 422 || !errors.includes(expected)) {
          failures.push(`${op.id} without ${field}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
        }
        failures.push(...checkAnswer(validate, op, res).map((p) => `${op.id} (without ${field}) ${p}`))
      }
      // a value of another type than the document's, for each typed field: refused, naming it
      for (const [field, schema] of Object.entries(propertiesOf(doc, op.bodySchema))) {
        if (!isObject(schema) || typeof schema["type"] !== "string" || field === "password_confirmation") continue
        const res = await call(op.method, pathOf(op, fixtures), {
          ...(token !== undefined ? { token } : {}),
          body: { ...sampled, [field]: { not: "a " + String(schema["type"]) } }
        })
        const errors = isObject(res.body) && isObject(res.body["errors"]) ? Object.keys(res.body["errors"]) : []
        if (routeLimited(op) && res.status === 429) continue
        if (res.status !== 422 || !errors.includes(field)) {
          failures.push(`${op.id} with an object for ${field}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`)
        }
      }
    }
    expect(failures).toEqual([])
  }, 180_000)

  test("what ends a session or the account, last: answered as declared", async () => {
    const validate = makeResponseValidator(doc)
    const failures: Array<string> = []
    const ops = operationsOf(doc)
    for (const id of LAST) {
      const op = ops.find((o) => o.id === id && o.method !== "HEAD")
      if (op === undefined) failures.push(`${id} is not in the document`)
      else await sendValid(op, validate, failures)
    }
    expect(failures).toEqual([])
  }, 60_000)
})

/** Issue 34: what the outside contract tools found the document and the server disagreeing on. */
describe("the document and the server agree (issue 34)", () => {
  test("POST /v1/account/2fa while two-factor sign-in is on: a declared 422", async () => {
    const email = `two-factor-${Date.now()}@example.test`
    const token = String(
      data(
        await call("POST", "/v1/auth/register", {
          body: { name: "Two Factor", email, password: PASSWORD, password_confirmation: PASSWORD }
        })
      )["token"]
    )
    const setUp = data(await call("POST", "/v1/account/2fa", { token }))
    const code = new TOTP({ secret: Secret.fromBase32(String(setUp["secret"])) }).generate()
    expect((await call("POST", "/v1/account/2fa/confirm", { token, body: { code } })).status).toBe(200)
    const again = await call("POST", "/v1/account/2fa", { token })
    expect(again.status).toBe(422)
    expect((again.body as Json)["message"]).toBe("Two-factor authentication is already enabled.")
    const op = operationsOf(doc).find((o) => o.id === "accounts.setUpTwoFactor")!
    expect(checkAnswer(makeResponseValidator(doc), op, again)).toEqual([])
  }, 30_000)

  test("request bodies allow fields they do not name, as the server does", async () => {
    const strict: Array<string> = []
    const walk = (id: string, schema: unknown, seen: Set<string>): void => {
      if (Array.isArray(schema)) {
        for (const s of schema) walk(id, s, seen)
        return
      }
      if (!isObject(schema)) return
      const ref = schema["$ref"]
      if (typeof ref === "string") {
        const name = ref.split("/").at(-1)!
        if (seen.has(name)) return
        seen.add(name)
        walk(id, ((doc["components"] as Json)["schemas"] as Json)[name], seen)
        return
      }
      if (schema["additionalProperties"] === false) strict.push(id)
      for (const value of Object.values(schema)) walk(id, value, seen)
    }
    for (const op of operationsOf(doc)) if (op.bodySchema !== undefined) walk(op.id, op.bodySchema, new Set())
    expect([...new Set(strict)]).toEqual([])

    const extra = { nickname: "unknown fields are ignored" }
    const registered = await call("POST", "/v1/auth/register", {
      body: { name: "Extra", email: `extra-${Date.now()}@example.test`, password: PASSWORD, password_confirmation: PASSWORD, ...extra }
    })
    expect(registered.status).toBe(201)
    const token = String(data(registered)["token"])
    const settings = await call("PUT", "/v1/account/settings", { token, body: { email_notifications: false, ...extra } })
    expect(settings.status).toBe(200)
  }, 30_000)

  test("info.license names an identifier or a URL; servers list this origin first", () => {
    const info = doc["info"] as Json
    const license = info["license"] as Json
    expect(typeof license["identifier"] === "string" || typeof license["url"] === "string").toBe(true)
    expect((doc["servers"] as Array<Json>)[0]!["url"]).toBe("/")
  })

  test("the change quote's plan_id and cycle_id are required in the document", () => {
    const op = operationsOf(doc).find((o) => o.id === "subscriptions.changeQuote")!
    expect(queryParams(op, true).sort()).toEqual(["cycle_id", "plan_id"])
  })

  test("every request example is valid for its schema and accepted by the server; register's makes an account", async () => {
    const validate = makeResponseValidator(doc)
    const ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats(ajv)
    ajv.addSchema({ $id: "doc", components: doc["components"] } as never)
    const failures: Array<string> = []
    for (const op of operationsOf(doc)) {
      if (op.method === "HEAD" || op.bodySchema === undefined || op.id === "billing.paymentWebhook" || LAST.includes(op.id)) continue
      const media = ((op.op["requestBody"] as Json)["content"] as Json)["application/json"] as Json
      if (!("example" in media)) {
        failures.push(`${op.id} has no request example`)
        continue
      }
      const schema = JSON.parse(JSON.stringify(op.bodySchema).replaceAll('"#/components/', '"doc#/components/'))
      const check = ajv.compile(schema)
      if (!check(media["example"])) failures.push(`${op.id} example invalid: ${JSON.stringify(check.errors).slice(0, 300)}`)
      if (op.id === "accounts.register") {
        const res = await call("POST", "/v1/auth/register", { body: media["example"] })
        if (res.status !== 201) failures.push(`the register example: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`)
        continue
      }
      await sendValid(op, validate, failures, media["example"])
    }
    expect(failures).toEqual([])
  }, 120_000)

  test("/docs lists the public sign-in routes first and no HEAD twins; /v1/openapi.json keeps them", async () => {
    const page = await fetch(`${base}/docs`)
    const html = await page.text()
    const json = /<script id="swagger-spec" type="application\/json">([\s\S]*?)<\/script>/.exec(html)?.[1]
    expect(json).toBeDefined()
    const shown = JSON.parse(json!) as Json
    const paths = shown["paths"] as Json
    expect(Object.values(paths).some((item) => isObject(item) && "head" in item)).toBe(false)
    expect(Object.keys(paths).slice(0, 2)).toEqual(["/v1/auth/register", "/v1/auth/login"])
    expect(operationsOf(doc).some((op) => op.method === "HEAD")).toBe(true)
  }, 30_000)
})
