import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// Issue 13: the VPN room's failures are their own errors, declared on the endpoints that fail
// with them ([D51]-[D54]), so the OpenAPI document lists each case under its status.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

type Responses = Record<string, { content: { "application/json": { schema: { $ref?: string; anyOf?: Array<{ $ref: string }> } } } }>

const refs = (responses: Responses, status: string): Array<string> => {
  const schema = responses[status]?.content["application/json"].schema
  if (!schema) return []
  return (schema.anyOf ?? [schema]).map((s) => String(s.$ref).replace("#/components/schemas/", ""))
}

describe("VPN errors in the OpenAPI document", () => {
  test("downloads and servers declare PlanExcludesServer (403), ServiceSuspended and BandwidthExceeded (423)", async () => {
    const doc = (await app.get("/v1/openapi.json")).body
    for (const path of ["/v1/servers/{server}/wireguard", "/v1/servers/{server}/openvpn"]) {
      const responses = doc.paths[path].get.responses as Responses
      // and `Forbidden` of authentication: an API key outside its scopes [D98]
      expect(refs(responses, "403").sort()).toEqual(["Forbidden", "PlanExcludesServer"])
      expect(refs(responses, "423").sort()).toEqual(["BandwidthExceeded", "ServiceSuspended"])
    }
    expect(refs(doc.paths["/v1/servers/{server}"].get.responses, "403").sort()).toEqual(["Forbidden", "PlanExcludesServer"])
    expect(refs(doc.paths["/v1/servers/{server}/wireguard"].get.responses, "503")).toEqual(expect.arrayContaining(["SubnetFull", "ServerNotConfigured"]))
    expect(doc.components.schemas.PlanExcludesServer).toBeDefined()
    expect(refs(doc.paths["/v1/node/usage"].post.responses, "422")).toContain("ValidationError")
    expect(refs(doc.paths["/v1/account/vpn/revoke-all"].post.responses, "200")).toEqual(["VpnAccessRevoked"])
  })
})
