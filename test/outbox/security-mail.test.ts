import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test"
import { Secret, TOTP } from "otpauth"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { runJobsOnce } from "../../src/jobs/Jobs.ts"
import type { Mail } from "../../src/platform/Mailer.ts"
import { PASSWORD, register } from "../accounts/helpers.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"

// [D96] security mail is always sent, whatever `email_notifications`, through the outbox:
// "new sign-in with a second factor" ([D97]) and "API key created" ([D98]); never a secret in it.
setDefaultTimeout(30_000)

let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ config: { appUrl: "https://app.example.test" } })
})
afterAll(() => app.dispose())

const SIGN_IN = "New sign-in to your account"

let n = 0
const from = (agent: string) => {
  n++
  return { "x-forwarded-for": `198.51.100.${n}`, "user-agent": agent }
}

const mailsTo = (email: string, subject?: string) => app.outbox.filter((m) => m.to === email && (subject === undefined || m.subject.startsWith(subject)))

/** waits until `count` mails of the subject reached the address, then checks no other arrives */
const exactly = async (email: string, subject: string, count: number): Promise<Array<Mail>> => {
  const deadline = Date.now() + 3000
  while (mailsTo(email, subject).length < count && Date.now() < deadline) await Bun.sleep(10)
  // another pass of the sender (the jobs') sends nothing again
  await app.run(runJobsOnce)
  await Bun.sleep(50)
  const found = mailsTo(email, subject)
  expect(found.length).toBe(count)
  return found
}

/** the text and HTML parts, for checks that hold for both */
const whole = (mail: Mail) => `${mail.subject}\n${mail.text}\n${mail.html ?? ""}`

const codeAt = (secret: string, offsetMs = 0) =>
  TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(secret), timestamp: app.clock.get().getTime() + offsetMs })

/** a user with two-factor sign-in on and notifications off */
const quietUserWithTwoFactor = async () => {
  const user = await register(app, { name: "Grace <Hopper>" })
  const me = await typedClient(app, { token: user.token })
  expect((await ok(me.accounts.updateSettings({ payload: { email_notifications: false } }))).data.email_notifications).toBe(false)
  const { secret } = await ok(me.accounts.setUpTwoFactor())
  // the declared 200 answer
  const confirmed = await ok(me.accounts.confirmTwoFactor({ payload: { code: codeAt(secret) } }))
  app.clock.advance(61_000)
  return { ...user, secret, recoveryCodes: [...confirmed.data.recovery_codes] }
}

describe("new sign-in with a second factor [D96] [D97]", () => {
  test("an otp sign-in mails once, with notifications off: when, address, user agent, a link; no code, token or password", async () => {
    const user = await quietUserWithTwoFactor()
    const origin = from("Firefox/130.0 <script>")
    const at = app.clock.get()
    const code = codeAt(user.secret)
    const guest = await typedClient(app, { headers: origin })
    // the declared 200 answer
    const signedIn = await ok(guest.accounts.login({ payload: { email: user.email, password: PASSWORD, otp: code } }))
    const [mail] = await exactly(user.email, SIGN_IN, 1)
    expect(mail!.subject).toBe(SIGN_IN)
    expect(mail!.text).toContain("Hello Grace <Hopper>,")
    expect(mail!.text).toContain("a code of your authenticator app")
    expect(mail!.text).toContain(`When:        ${at.toISOString().slice(0, 19).replace("T", " ")} UTC`)
    expect(mail!.text).toContain(`Address:     ${origin["x-forwarded-for"]}`)
    expect(mail!.text).toContain("User agent:  Firefox/130.0 <script>")
    expect(mail!.text).toContain("https://app.example.test")
    expect(mail!.text).toContain("GET /v1/account/sessions")
    expect(mail!.text).toContain("always sent")
    // the HTML part escapes what the client sent (Mustache writes "/" as &#x2F; too)
    expect(mail!.html).toContain("Firefox&#x2F;130.0 &lt;script&gt;")
    expect(mail!.html).toContain("Grace &lt;Hopper&gt;")
    expect(mail!.html).toContain(`href="https:&#x2F;&#x2F;app.example.test"`)
    expect(mail!.html).not.toContain("<script>")
    // nothing that signs in
    const token = signedIn.token
    for (const secret of [code, token, token.split("|")[1]!, PASSWORD, user.secret, ...user.recoveryCodes]) {
      expect(whole(mail!)).not.toContain(secret)
    }
    // it went through the outbox, as a security mail of its own kind
    const rows = await app.sql<{ kind: string; status: string }>`select kind, status from outbox where recipient = ${user.email} and kind = 'sign-in-2fa'`
    expect(rows).toEqual([{ kind: "sign-in-2fa", status: "sent" }])
  })

  test("a recovery code sign-in mails once, saying a recovery code was used and how many are left; never the code", async () => {
    const user = await quietUserWithTwoFactor()
    const [first] = user.recoveryCodes
    const guest = await typedClient(app, { headers: from("Curl/8") })
    // the declared 200 answer
    const signedIn = await ok(guest.accounts.login({ payload: { email: user.email, password: PASSWORD, recovery_code: first! } }))
    expect(signedIn.token).toContain("|")
    const [mail] = await exactly(user.email, SIGN_IN, 1)
    expect(mail!.text).toContain("one of your recovery codes")
    expect(mail!.text).toContain("Recovery codes left: 9")
    expect(whole(mail!)).not.toContain(first!)
    expect(whole(mail!)).not.toContain(first!.replace("-", ""))
  })

  test("no mail for a sign-in without a second factor, a missing or wrong code, or a wrong password", async () => {
    const plain = await register(app)
    const guest = await typedClient(app, { headers: from("A/1") })
    // the declared 200 answer
    expect((await ok(guest.accounts.login({ payload: { email: plain.email, password: PASSWORD } }))).user.email).toBe(plain.email)
    const user = await quietUserWithTwoFactor()
    expect((await app.post("/v1/auth/login", { headers: from("A/1"), body: { email: user.email, password: PASSWORD } })).status).toBe(422)
    expect(
      (
        await app.post("/v1/auth/login", {
          headers: from("A/1"),
          body: { email: user.email, password: PASSWORD, otp: "000000" === codeAt(user.secret) ? "111111" : "000000" }
        })
      ).status
    ).toBe(422)
    expect(
      (await app.post("/v1/auth/login", { headers: from("A/1"), body: { email: user.email, password: "Wrong-Passw0rd-1", otp: codeAt(user.secret) } })).status
    ).toBe(401)
    await exactly(plain.email, SIGN_IN, 0)
    await exactly(user.email, SIGN_IN, 0)
  })
})

describe("API key created [D96] [D98]", () => {
  test("mails once, with notifications off: the key's name, scopes and expiry; never the key", async () => {
    const user = await register(app, { name: "Ada" })
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.accounts.updateSettings({ payload: { email_notifications: false } }))).data.email_notifications).toBe(false)
    const expiresAt = new Date(app.clock.get().getTime() + 30 * 86_400_000)
    const terraform = await typedClient(app, { token: user.token, headers: from("Terraform/1.9") })
    // the declared 201 answer
    const created = await ok(terraform.accounts.createApiKey({ payload: { name: "deploy <bot>", scopes: ["read", "write"], expires_at: expiresAt } }))
    const key = created.key
    const [mail] = await exactly(user.email, "A new API key was created", 1)
    expect(mail!.subject).toBe("A new API key was created: deploy <bot>")
    expect(mail!.text).toContain("Name:     deploy <bot>")
    expect(mail!.text).toContain("Scopes:   read, write")
    expect(mail!.text).toContain(`Expires:  ${expiresAt.toISOString().slice(0, 19).replace("T", " ")} UTC`)
    expect(mail!.text).toContain(`DELETE /v1/account/api-keys/${created.id}`)
    expect(mail!.html).toContain("deploy &lt;bot&gt;")
    expect(mail!.html).toContain(`href="https:&#x2F;&#x2F;app.example.test"`)
    expect(whole(mail!)).not.toContain(key)
    expect(whole(mail!)).not.toContain(key.split("_")[2]!)
    expect(whole(mail!)).not.toContain(user.token.split("|")[1]!)
  })

  test("a key without expiry says it never expires; a refused key (422) mails nothing", async () => {
    const user = await register(app)
    expect((await app.post("/v1/account/api-keys", { token: user.token, body: { name: "bot", scopes: ["admin:read"] } })).status).toBe(422)
    await exactly(user.email, "A new API key was created", 0)
    const me = await typedClient(app, { token: user.token })
    // the declared 201 answer
    expect((await ok(me.accounts.createApiKey({ payload: { name: "bot", scopes: ["read"] } }))).scopes).toEqual(["read"])
    const [mail] = await exactly(user.email, "A new API key was created", 1)
    expect(mail!.text).toContain("Expires:  never")
  })
})
