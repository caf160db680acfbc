import { afterAll, beforeAll, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 2: /v1/openapi.json documents every path of the spec (and DECISIONS' additions).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ reset: false })
})
afterAll(() => app.dispose())

const specPaths: ReadonlyArray<readonly [string, string]> = [
  ["post", "/v1/auth/register"],
  ["post", "/v1/auth/login"],
  ["post", "/v1/auth/logout"],
  ["post", "/v1/auth/logout-all"],
  ["post", "/v1/auth/forgot-password"],
  ["post", "/v1/auth/reset-password"],
  ["post", "/v1/auth/verify-email"],
  ["post", "/v1/auth/resend-verification"],
  ["get", "/v1/user"],
  ["get", "/v1/status"],
  ["get", "/v1/plans"],
  ["get", "/v1/plans/{plan}"],
  ["get", "/v1/plans/{plan}/cycles"],
  ["get", "/v1/plan/cycles/{cycle}"],
  ["post", "/v1/promos/validate"],
  ["get", "/v1/services"],
  ["get", "/v1/services/current"],
  ["get", "/v1/services/{service}"],
  ["put", "/v1/services/{service}/auto-renew"],
  ["get", "/v1/services/{service}/bandwidth"],
  ["get", "/v1/account/profile"],
  ["put", "/v1/account/profile"],
  ["put", "/v1/account/password"],
  ["get", "/v1/account/settings"],
  ["put", "/v1/account/settings"],
  ["delete", "/v1/account"],
  ["get", "/v1/servers"],
  ["get", "/v1/servers/{server}"],
  ["get", "/v1/servers/{server}/wireguard"],
  ["get", "/v1/servers/{server}/openvpn"],
  ["get", "/v1/invoices"],
  ["get", "/v1/invoices/{invoice}"],
  ["get", "/v1/invoices/{invoice}/payment-url"],
  ["get", "/v1/bandwidth/current"],
  ["get", "/v1/bandwidth/history"],
  ["get", "/v1/bandwidth/summary"],
  ["get", "/v1/tickets"],
  ["post", "/v1/tickets"],
  ["get", "/v1/tickets/{ticket}"],
  ["post", "/v1/tickets/{ticket}/reply"],
  ["put", "/v1/tickets/{ticket}/close"],
  ["get", "/v1/faq"],
  // DECISIONS: orders, webhook, node API, VPN credentials, admin
  ["post", "/v1/orders"],
  ["post", "/v1/invoices/{invoice}/cancel"],
  ["post", "/v1/webhooks/payments/{gateway}"],
  ["get", "/v1/node/peers"],
  ["post", "/v1/node/openvpn/auth"],
  ["post", "/v1/node/usage"],
  ["post", "/v1/node/counters"],
  ["get", "/v1/account/vpn-credentials"],
  ["post", "/v1/account/vpn-credentials/rotate"],
  ["post", "/v1/admin/plans"],
  ["put", "/v1/admin/plans/{plan}"],
  ["post", "/v1/admin/plans/{plan}/cycles"],
  ["post", "/v1/admin/promos"],
  ["post", "/v1/admin/servers"],
  ["put", "/v1/admin/servers/{server}"],
  ["get", "/v1/admin/users"],
  ["put", "/v1/admin/users/{user}"],
  ["post", "/v1/admin/users/{user}/services"],
  ["put", "/v1/admin/services/{service}"],
  ["post", "/v1/admin/users/{user}/invoices"],
  ["post", "/v1/admin/invoices/{invoice}/mark-paid"],
  ["post", "/v1/admin/services/{service}/usage"],
  ["post", "/v1/admin/tickets/{ticket}/reply"],
  ["post", "/v1/admin/faq"],
  // [D97] two-factor sign-in
  ["post", "/v1/account/2fa"],
  ["post", "/v1/account/2fa/confirm"],
  ["delete", "/v1/account/2fa"]
]

test("every path of the spec and DECISIONS is documented with its method", async () => {
  const doc = await app.get("/v1/openapi.json")
  expect(doc.status).toBe(200)
  const missing = specPaths.filter(([method, path]) => doc.body.paths?.[path]?.[method] === undefined)
  expect(missing).toEqual([])
})

test("the framework's default 400 is not documented; errors are the envelope", async () => {
  const doc = await app.get("/v1/openapi.json")
  expect(JSON.stringify(doc.body)).not.toContain("HttpApiDecodeError")
  expect(doc.body.components.schemas.ValidationError).toBeDefined()
})
