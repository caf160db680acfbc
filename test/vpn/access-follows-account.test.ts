import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { anyAddress, resetTokenOf, waitForMail } from "../accounts/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { nodePeersOf, openvpnAuthOf, vpnMember } from "./fixtures.ts"

// [D21], [D23], [D91] (rev. 2), through the accounts routes that cause them: an admin disabling a
// user takes the user's VPN access off every node at once (re-enabling restores it), and a password
// reset renews every WireGuard key and the OpenVPN secret handed out before.
let app: TestApp
let admin: Awaited<ReturnType<TestApp["createUser"]>>
beforeAll(async () => {
  app = await makeTestApp()
  admin = await app.createUser({ role: "admin" })
})
afterAll(() => app.dispose())

const member = () => vpnMember(app)
const nodePeers = (nodeToken: string) => nodePeersOf(app, nodeToken)
const openvpnAuth = async (nodeToken: string, username: string, password: string) => (await openvpnAuthOf(app, nodeToken, username, password)).status

const publicKeyOf = (conf: string) => KeyGen.publicKeyOf(/^PrivateKey = (.+)$/m.exec(conf)![1]!)

describe("VPN access follows the account [D91]", () => {
  test("an admin disabling a user takes its peers off the node and refuses its OpenVPN login; enabling restores both [D21]", async () => {
    const m = await member()
    const key = publicKeyOf(m.conf)
    expect((await nodePeers(m.wg.nodeToken)).find((p) => p.public_key === key)?.enabled).toBe(true)

    const staff = await typedClient(app, { token: admin.token })
    const disabled = await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { status: 0 } }))
    expect(disabled.status).toBe(0)
    expect((await nodePeers(m.wg.nodeToken)).find((p) => p.public_key === key)?.enabled).toBe(false)
    expect(await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).toBe(403)

    const enabled = await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { status: 1 } }))
    expect(enabled.status).toBe(1)
    expect((await nodePeers(m.wg.nodeToken)).find((p) => p.public_key === key)?.enabled).toBe(true)
    expect(await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).toBe(200)
  })

  test("a role change alone leaves VPN access as it is", async () => {
    const m = await member()
    const key = publicKeyOf(m.conf)
    const staff = await typedClient(app, { token: admin.token })
    expect((await ok(staff.accountsAdmin.updateUser({ path: { user: m.user.id }, payload: { role: "admin" } }))).role).toBe("admin")
    expect((await nodePeers(m.wg.nodeToken)).find((p) => p.public_key === key)?.enabled).toBe(true)
  })

  test("a password reset renews every key and secret handed out before [D23]", async () => {
    const m = await member()
    const oldKey = publicKeyOf(m.conf)
    const guest = await typedClient(app, { headers: anyAddress() })
    expect(typeof (await ok(guest.accounts.forgotPassword({ payload: { email: m.user.email } })))).toBe("string")
    const mail = await waitForMail(app, (x) => x.to === m.user.email && /reset-password\?token=/.test(x.text))
    const stranger = await typedClient(app, { headers: anyAddress() })
    const reset = await ok(
      stranger.accounts.resetPassword({
        payload: { token: resetTokenOf(mail), email: m.user.email, password: "New-Passw0rd-2026", password_confirmation: "New-Passw0rd-2026" }
      })
    )
    expect(typeof reset).toBe("string")

    // the old key has left the node, the old secret is refused
    const peers = await nodePeers(m.wg.nodeToken)
    expect(peers.map((p) => p.public_key)).not.toContain(oldKey)
    expect(await openvpnAuth(m.ovpn.nodeToken, m.username, m.secret)).toBe(403)

    // a fresh login and download gives a working config with the new key, on the same address
    const visitor = await typedClient(app, { headers: anyAddress() })
    const login = await ok(visitor.accounts.login({ payload: { email: m.user.email, password: "New-Passw0rd-2026" } }))
    const me = await typedClient(app, { token: login.token })
    const conf = await ok(me.vpn.wireguard({ path: { server: m.wg.id } }))
    const newKey = publicKeyOf(conf)
    expect(newKey).not.toBe(oldKey)
    expect(peers.find((p) => p.public_key === newKey)?.enabled).toBe(true)
    expect(/^Address = (.+)$/m.exec(conf)![1]).toBe(/^Address = (.+)$/m.exec(m.conf)![1])
    const creds = await ok(me.vpn.vpnCredentials())
    expect(creds.password).not.toBe(m.secret)
    expect(await openvpnAuth(m.ovpn.nodeToken, m.username, creds.password)).toBe(200)
  })
})
