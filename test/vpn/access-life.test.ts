import { SqlClient } from "@effect/sql"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { VpnAccounts } from "../../src/vpn/VpnAccounts.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { makeServer, nodePeersOf, openvpnAuthOf, vpnMember } from "./fixtures.ts"

// [D21], [D23], [D91] (rev. 2): VPN access follows the account: a disabled user's peers are
// disabled and their OpenVPN credentials refused; a reset (or revoke-all) renews every key.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

/** the service, run the way the accounts room will: inside its own open transaction */
const inTransaction = <A>(f: (accounts: VpnAccounts) => Effect.Effect<A>) =>
  app.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(Effect.flatMap(VpnAccounts, f))).pipe(Effect.provide(VpnAccounts.Default)))

const member = () => vpnMember(app)
const nodePeers = (nodeToken: string) => nodePeersOf(app, nodeToken)
const openvpnAuth = (nodeToken: string, username: string, password: string) => openvpnAuthOf(app, nodeToken, username, password)

const privateKeyOf = (conf: string) => /^PrivateKey = (.+)$/m.exec(conf)![1]!
const addressOf = (conf: string) => /^Address = (.+)$/m.exec(conf)![1]!

describe("VpnAccounts.setUserEnabled [D21] [D91]", () => {
  test("a disabled user's peers are disabled and their OpenVPN credentials refused; re-enabling restores both", async () => {
    const m = await member()
    const other = await member()
    const publicKey = KeyGen.publicKeyOf(privateKeyOf(m.conf))
    expect(await nodePeers(m.wg.nodeToken)).toEqual([{ public_key: publicKey, allowed_ips: `${addressOf(m.conf)}`, enabled: true, speed_limit_mbps: null }])
    expect((await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).status).toBe(200)

    await inTransaction((accounts) => accounts.setUserEnabled(m.user.id, false))
    expect(await nodePeers(m.wg.nodeToken)).toEqual([{ public_key: publicKey, allowed_ips: `${addressOf(m.conf)}`, enabled: false, speed_limit_mbps: null }])
    const refused = await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)
    expect(refused.status).toBe(403)
    expect(refused.body).toEqual({ success: false, message: "Forbidden." })
    // nobody else is touched
    expect((await nodePeers(other.wg.nodeToken))[0]!.enabled).toBe(true)
    expect((await openvpnAuth(other.ovpn.nodeToken, other.username, other.secret)).status).toBe(200)

    // disabling twice is still one hold; one enable lifts it
    await inTransaction((accounts) => accounts.setUserEnabled(m.user.id, false))
    await inTransaction((accounts) => accounts.setUserEnabled(m.user.id, true))
    expect((await nodePeers(m.wg.nodeToken))[0]!.enabled).toBe(true)
    expect((await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).status).toBe(200)
  })

  test("a hold set inside a transaction that rolls back is not kept", async () => {
    const m = await member()
    await app.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.withTransaction(Effect.flatMap(VpnAccounts, (accounts) => Effect.zipRight(accounts.setUserEnabled(m.user.id, false), Effect.fail("rollback"))))
      ).pipe(Effect.provide(VpnAccounts.Default), Effect.ignore)
    )
    expect((await nodePeers(m.wg.nodeToken))[0]!.enabled).toBe(true)
  })
})

/** checks that everything handed out before a revocation stopped working and the new access works */
const expectRenewed = async (m: Awaited<ReturnType<typeof member>>) => {
  const oldPublicKey = KeyGen.publicKeyOf(privateKeyOf(m.conf))
  const peers = await nodePeers(m.wg.nodeToken)
  expect(peers.map((p) => p.public_key)).not.toContain(oldPublicKey)
  expect(peers).toHaveLength(1)
  expect(peers[0]!.allowed_ips).toBe(addressOf(m.conf))
  expect(peers[0]!.enabled).toBe(true)

  const next = await app.get(`/v1/servers/${m.wg.id}/wireguard`, { token: m.user.token })
  expect(next.status).toBe(200)
  expect(next.headers.get("cache-control")).toBe("no-store")
  expect(addressOf(next.text)).toBe(addressOf(m.conf))
  expect(privateKeyOf(next.text)).not.toBe(privateKeyOf(m.conf))
  const [stored] = await app.sql<{ public_key: string }>`select public_key from wireguard_peers where user_id = ${m.user.id}`
  expect(KeyGen.publicKeyOf(privateKeyOf(next.text))).toBe(stored!.public_key)
  expect(peers[0]!.public_key).toBe(stored!.public_key)

  expect((await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).status).toBe(403)
  const me = await typedClient(app, { token: m.user.token })
  const creds = await ok(me.vpn.vpnCredentials())
  expect(creds.username).toBe(m.username)
  expect(creds.password).not.toBe(m.secret)
  expect((await openvpnAuth(m.ovpn.nodeToken, m.username, creds.password)).status).toBe(200)
}

describe("VpnAccounts.revokeAll [D23] [D91]", () => {
  test("inside the caller's transaction: every key pair replaced (addresses kept) and the OpenVPN secret renewed", async () => {
    const m = await member()
    // a second WireGuard server of the same plan: both peers are re-keyed
    const [plan] = await app.sql<{ plan_id: number }>`select plan_id from server_plans where server_id = ${m.wg.id}`
    const wg2 = await makeServer(app, { planIds: [plan!.plan_id] })
    const me = await typedClient(app, { token: m.user.token })
    const conf2 = await ok(me.vpn.wireguard({ path: { server: wg2.id } }))
    const other = await member()

    await inTransaction((accounts) => accounts.revokeAll(m.user.id))

    await expectRenewed(m)
    const peers2 = await nodePeers(wg2.nodeToken)
    expect(peers2.map((p) => p.public_key)).not.toContain(KeyGen.publicKeyOf(privateKeyOf(conf2)))
    expect(peers2.map((p) => p.allowed_ips)).toEqual([addressOf(conf2)])
    // nobody else is touched
    expect((await nodePeers(other.wg.nodeToken)).map((p) => p.public_key)).toEqual([KeyGen.publicKeyOf(privateKeyOf(other.conf))])
    expect((await openvpnAuth(other.ovpn.nodeToken, other.username, other.secret)).status).toBe(200)
  })

  test("a user with no peer and no credentials: nothing to renew, no failure", async () => {
    const user = await app.createUser()
    await inTransaction((accounts) => accounts.revokeAll(user.id))
    const count = await app.sql<{ n: number }>`select count(*)::int as n from vpn_credentials where user_id = ${user.id}`
    expect(count[0]!.n).toBe(0)
  })
})

describe("POST /v1/account/vpn/revoke-all [D91]", () => {
  test("200 with a message; configs and credentials handed out before stop working", async () => {
    const m = await member()
    const res = await app.post("/v1/account/vpn/revoke-all", { token: m.user.token })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "VPN access revoked.", data: {} })
    await expectRenewed(m)
  })

  test("needs a token (401)", async () => {
    const res = await app.post("/v1/account/vpn/revoke-all")
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
  })
})
