import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Secret, TOTP } from "otpauth"
import { TOTP_PARAMETERS } from "../../src/accounts/TwoFactor.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { fails, ok, typedClient } from "../support/typed.ts"
import { anyAddress, freshEmail, PASSWORD, register, resetTokenOf, waitForMail } from "./helpers.ts"

// [D119] browser sessions: the `vpn_session` (HttpOnly) and `vpn_csrf` cookies, accepted wherever a
// bearer token is, a double-submit CSRF header bound to the session, bearer precedence, sign-out.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

interface SetCookie {
  readonly name: string
  readonly value: string
  /** the attributes, lower-cased names: `max-age`, `path`, `samesite`, `httponly`, `secure` */
  readonly attributes: Record<string, string>
}

const setCookies = (headers: Headers): Record<string, SetCookie> => {
  const out: Record<string, SetCookie> = {}
  for (const line of headers.getSetCookie()) {
    const [pair, ...rest] = line.split(";").map((part) => part.trim())
    const at = pair!.indexOf("=")
    const name = pair!.slice(0, at)
    const attributes: Record<string, string> = {}
    for (const attribute of rest) {
      const eq = attribute.indexOf("=")
      if (eq === -1) attributes[attribute.toLowerCase()] = ""
      else attributes[attribute.slice(0, eq).toLowerCase()] = attribute.slice(eq + 1)
    }
    out[name] = { name, value: decodeURIComponent(pair!.slice(at + 1)), attributes }
  }
  return out
}

/** what a browser would keep: the two cookies' values */
interface Browser {
  readonly session: string
  readonly csrf: string
}

const signIn = async (email: string, password = PASSWORD, extra: Record<string, unknown> = {}) => {
  const res = await app.post("/v1/auth/session", { headers: anyAddress(), body: { email, password, ...extra } })
  const cookies = setCookies(res.headers)
  return { res, cookies, browser: { session: cookies["vpn_session"]?.value ?? "", csrf: cookies["vpn_csrf"]?.value ?? "" } }
}

/** the headers a browser sends with its cookies; `csrf` the X-CSRF-Token a script adds */
const as = (browser: Browser, csrf?: string): Record<string, string> => ({
  cookie: `vpn_session=${encodeURIComponent(browser.session)}; vpn_csrf=${browser.csrf}`,
  ...(csrf !== undefined ? { "x-csrf-token": csrf } : {})
})

/** the typed client of a browser: its cookies, and the X-CSRF-Token when given */
const browserClient = (browser: Browser, csrf?: string) => typedClient(app, { headers: as(browser, csrf) })

const SETTINGS = { email_notifications: false }

describe("POST /v1/auth/session [D119]", () => {
  test("200 {data: {user}} with no token; sets vpn_session (HttpOnly, Strict, Path=/, Max-Age TOKEN_TTL_DAYS) and vpn_csrf (readable)", async () => {
    const user = await register(app)
    const { browser, cookies, res } = await signIn(user.email)
    expect(res.status).toBe(200)
    expect(res.body.success).toBe(true)
    expect(Object.keys(res.body.data)).toEqual(["user"])
    expect(res.body.data.user).toMatchObject({ id: user.id, email: user.email, status: 1, role: "user" })
    expect(res.text).not.toContain(browser.session)
    expect(res.headers.get("cache-control")).toBe("no-store")

    const session = cookies["vpn_session"]!
    expect(session.value).toMatch(/^[0-9]+\|[A-Za-z0-9]{40}$/)
    expect(session.attributes).toEqual({ "max-age": String(30 * 86_400), path: "/", httponly: "", samesite: "Strict" })
    const csrf = cookies["vpn_csrf"]!
    expect(csrf.value).toMatch(/^[0-9a-f]{64}$/)
    expect(csrf.attributes).toEqual({ "max-age": String(30 * 86_400), path: "/", samesite: "Strict" })

    // the cookie is the caller's credential, as the token would be
    const cookie = await browserClient(browser)
    const me = await ok(cookie.accounts.user())
    expect<number>(me.id).toBe(user.id)
  })

  test("wrong credentials: 401 `Invalid credentials.` and no cookie; the same counter as POST /v1/auth/login (the 6th is 429)", async () => {
    const user = await register(app)
    app.clock.advance(61_000)
    const wrong = await signIn(user.email, "Wrong-Passw0rd-9")
    expect(wrong.res.status).toBe(401)
    expect(wrong.res.body).toEqual({ success: false, message: "Invalid credentials." })
    expect(wrong.res.headers.getSetCookie()).toEqual([])
    for (let i = 0; i < 2; i++) {
      expect((await app.post("/v1/auth/login", { headers: anyAddress(), body: { email: user.email, password: "Wrong-Passw0rd-9" } })).status).toBe(401)
    }
    expect((await signIn(user.email, "Wrong-Passw0rd-9")).res.status).toBe(401)
    expect((await signIn(user.email)).res.status).toBe(200)
    const blocked = await signIn(user.email)
    expect(blocked.res.status).toBe(429)
    expect(blocked.res.body).toEqual({ success: false, message: "Too Many Attempts." })
    expect((await app.post("/v1/auth/login", { headers: anyAddress(), body: { email: user.email, password: PASSWORD } })).status).toBe(429)
    app.clock.advance(61_000)
  })

  test("a disabled account: 403 as login answers; 422 for a malformed body", async () => {
    const user = await register(app)
    await app.sql`update users set status = 0 where id = ${user.id}`
    const login = await app.post("/v1/auth/login", { headers: anyAddress(), body: { email: user.email, password: PASSWORD } })
    const disabled = await signIn(user.email)
    expect(disabled.res.status).toBe(login.status)
    expect(disabled.res.body).toEqual(login.body)
    expect(disabled.res.headers.getSetCookie()).toEqual([])
    const bad = await app.post("/v1/auth/session", { headers: anyAddress(), body: { email: "not-an-email" } })
    expect(bad.status).toBe(422)
    expect(Object.keys(bad.body.errors).sort()).toEqual(["email", "password"])
  })

  test("two-factor sign-in: without otp 422 `errors.otp`, with the code 200 and the cookies (a second-factor session)", async () => {
    const user = await register(app)
    const me = await typedClient(app, { token: user.token })
    const { secret } = await ok(me.accounts.setUpTwoFactor())
    const code = (offset = 0) => TOTP.generate({ ...TOTP_PARAMETERS, secret: Secret.fromBase32(secret), timestamp: app.clock.get().getTime() + offset })
    await ok(me.accounts.confirmTwoFactor({ payload: { code: code() } }))
    app.clock.advance(61_000)
    const missing = await signIn(user.email)
    expect(missing.res.status).toBe(422)
    expect(missing.res.body).toEqual({ success: false, message: "The given data was invalid.", errors: { otp: ["The otp field is required."] } })
    expect(missing.res.headers.getSetCookie()).toEqual([])
    const signedIn = await signIn(user.email, PASSWORD, { otp: code() })
    expect(signedIn.res.status).toBe(200)
    expect(signedIn.browser.session).not.toBe("")
    const row = await app.sql<{ second_factor: boolean }>`select second_factor from access_tokens where id = ${Number(signedIn.browser.session.split("|")[0])}`
    expect(row[0]!.second_factor).toBe(true)
    // the code is spent, for cookie sign-in as for login
    app.clock.advance(1000)
    expect((await signIn(user.email, PASSWORD, { otp: code() })).res.status).toBe(422)
  })
})

describe("the cookie as a credential [D119]", () => {
  test("GET /v1/auth/session: the signed-in user under data.user, or 401", async () => {
    const user = await register(app)
    const { browser } = await signIn(user.email)
    const cookie = await browserClient(browser)
    const session = await ok(cookie.accounts.currentSession())
    expect(session).toMatchObject({ user: { id: user.id, email: user.email, role: "user" } })
    expect((await app.get("/v1/auth/session")).status).toBe(401)
    expect((await app.get("/v1/auth/session")).body).toEqual({ success: false, message: "Unauthenticated." })
    expect((await app.get("/v1/auth/session", { headers: { cookie: "vpn_session=1%7Cnot-a-token" } })).status).toBe(401)
    // a bearer token answers too
    const bearer = await typedClient(app, { token: user.token })
    expect<number>((await ok(bearer.accounts.currentSession())).user.id).toBe(user.id)
  })

  test("a write needs X-CSRF-Token equal to this session's vpn_csrf: missing, wrong or another session's is 403 `CSRF token mismatch.`", async () => {
    const user = await register(app)
    const mine = (await signIn(user.email)).browser
    const another = (await signIn(user.email)).browser
    const stranger = (await signIn((await register(app)).email)).browser
    expect(another.csrf).not.toBe(mine.csrf)
    const refused = { success: false, message: "CSRF token mismatch." }
    for (const csrf of [undefined, "", "0".repeat(64), another.csrf, stranger.csrf, mine.csrf.toUpperCase()]) {
      const res = await app.put("/v1/account/settings", { headers: as(mine, csrf), body: SETTINGS })
      expect(res.status).toBe(403)
      expect(res.body).toEqual(refused)
    }
    // the csrf cookie alone is not the header
    const crossed = await browserClient({ session: mine.session, csrf: another.csrf }, mine.csrf)
    await ok(crossed.accounts.updateSettings({ payload: SETTINGS }))
    const withHeader = await browserClient(mine, mine.csrf)
    const changed = await ok(withHeader.accounts.updateSettings({ payload: SETTINGS }))
    expect(changed.data).toMatchObject(SETTINGS)
    // GET and HEAD need none
    const readOnly = await browserClient(mine)
    expect(await ok(readOnly.accounts.settings())).toMatchObject(SETTINGS)
    expect((await app.request("HEAD", "/v1/account/settings", { headers: as(mine) })).status).toBe(200)
    // DELETE too: revoking another session without the header is refused, with it done
    const anotherId = Number(another.session.split("|")[0])
    expect((await app.del(`/v1/account/sessions/${anotherId}`, { headers: as(mine) })).status).toBe(403)
    await ok(withHeader.accounts.revokeSession({ path: { session: anotherId } }))
    const revoked = await browserClient(another)
    expect((await fails(revoked.accounts.user()))._tag).toBe("Unauthenticated")
  })

  test("admin routes take an admin's cookie session, with the same CSRF rule; a user's cookie is 403 there", async () => {
    const admin = await app.createUser({ role: "admin" })
    const browser = (await signIn(admin.email, admin.password)).browser
    const cookie = await browserClient(browser)
    expect((await ok(cookie.accountsAdmin.listUsers({ urlParams: {} }))).meta.current_page).toBe(1)
    const plan = { name: "Cookie plan", description: "d", bandwidth_limit_gb: 10, speed_limit_mbps: null, trial_days: 0, is_active: false }
    const refused = await app.post("/v1/admin/plans", { headers: as(browser), body: plan })
    expect(refused.status).toBe(403)
    expect(refused.body.message).toBe("CSRF token mismatch.")
    const cookieWithCsrf = await browserClient(browser, browser.csrf)
    expect((await ok(cookieWithCsrf.catalogAdmin.createPlan({ payload: plan }))).name).toBe("Cookie plan")
    const user = (await signIn((await register(app)).email)).browser
    expect((await app.get("/v1/admin/users", { headers: as(user) })).body).toEqual({ success: false, message: "Forbidden." })
  })

  test("a request with both a bearer token and the cookie is judged by the bearer token", async () => {
    const alice = await register(app)
    const bob = await register(app)
    const bobs = (await signIn(bob.email)).browser
    const both = await typedClient(app, { token: alice.token, headers: as(bobs) })
    const me = await ok(both.accounts.user())
    expect<number>(me.id).toBe(alice.id)
    // no CSRF header needed: the bearer token is the credential
    await ok(both.accounts.updateSettings({ payload: SETTINGS }))
    // a dead bearer token is 401, whatever the cookie
    const dead = await typedClient(app, { token: "1|AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", headers: as(bobs) })
    expect((await fails(dead.accounts.user()))._tag).toBe("Unauthenticated")
    // an API key is never taken from the cookie
    const alices = await typedClient(app, { token: alice.token })
    const key = await ok(alices.accounts.createApiKey({ payload: { name: "k", scopes: ["read"] } }))
    const keyAsCookie = await typedClient(app, { headers: { cookie: `vpn_session=${key.key}` } })
    expect((await fails(keyAsCookie.accounts.user()))._tag).toBe("Unauthenticated")
  })

  test("the cookie session is listed in GET /v1/account/sessions, current for the cookie's own request", async () => {
    const user = await register(app)
    const { browser } = await signIn(user.email)
    const client = await typedClient(app, { headers: { ...as(browser), "user-agent": "Browser/1.0" } })
    const sessions = await ok(client.accounts.listSessions())
    const id = Number(browser.session.split("|")[0])
    expect(sessions.map((s) => s.id)).toContain(id)
    expect(sessions.find((s) => s.current)?.id).toBe(id)
  })
})

describe("signing out [D119], [D114]", () => {
  test("POST /v1/auth/logout clears both cookies (Max-Age=0) and revokes the session", async () => {
    const user = await register(app)
    const { browser } = await signIn(user.email)
    expect((await app.post("/v1/auth/logout", { headers: as(browser) })).status).toBe(403)
    const res = await app.post("/v1/auth/logout", { headers: as(browser, browser.csrf) })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ success: true, message: "Successfully logged out.", data: {} })
    const cleared = setCookies(res.headers)
    expect(cleared["vpn_session"]).toMatchObject({ value: "", attributes: { "max-age": "0", path: "/", samesite: "Strict", httponly: "" } })
    expect(cleared["vpn_csrf"]).toMatchObject({ value: "", attributes: { "max-age": "0", path: "/", samesite: "Strict" } })
    const signedOut = await browserClient(browser)
    expect((await fails(signedOut.accounts.user()))._tag).toBe("Unauthenticated")
    const bearer = await typedClient(app, { token: user.token })
    expect<number>((await ok(bearer.accounts.user())).id).toBe(user.id)
  })

  test("logout-all, a password change from another session and a password reset revoke the cookie session", async () => {
    const user = await register(app)
    let browser = (await signIn(user.email)).browser
    const bearer = await typedClient(app, { token: user.token })
    await ok(bearer.accounts.logoutAll())
    const firstCookie = await browserClient(browser)
    expect((await fails(firstCookie.accounts.user()))._tag).toBe("Unauthenticated")

    app.clock.advance(61_000)
    browser = (await signIn(user.email)).browser
    const anonymous = await typedClient(app, { headers: anyAddress() })
    const { token } = await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))
    const password = "An0ther-Passw0rd-Cookie"
    const other = await typedClient(app, { token })
    await ok(other.accounts.changePassword({ payload: { current_password: PASSWORD, password, password_confirmation: password } }))
    const secondCookie = await browserClient(browser)
    expect((await fails(secondCookie.accounts.user()))._tag).toBe("Unauthenticated")

    app.clock.advance(61_000)
    browser = (await signIn(user.email, password)).browser
    const thirdCookie = await browserClient(browser)
    expect<number>((await ok(thirdCookie.accounts.user())).id).toBe(user.id)
    const forgetful = await typedClient(app, { headers: anyAddress() })
    await ok(forgetful.accounts.forgotPassword({ payload: { email: user.email } }))
    const mail = await waitForMail(app, (m) => m.to === user.email && m.text.includes("/reset-password?token="))
    const reset = "Thi3d-Passw0rd-Cookie"
    const resetter = await typedClient(app, { headers: anyAddress() })
    await ok(resetter.accounts.resetPassword({ payload: { token: resetTokenOf(mail), email: user.email, password: reset, password_confirmation: reset } }))
    const lastCookie = await browserClient(browser)
    expect((await fails(lastCookie.accounts.user()))._tag).toBe("Unauthenticated")
  })

  test("a password change through the cookie session keeps that session (it is the caller's)", async () => {
    const user = await register(app)
    const { browser } = await signIn(user.email)
    const password = "Cookie-Changed-Passw0rd"
    const cookie = await browserClient(browser, browser.csrf)
    await ok(cookie.accounts.changePassword({ payload: { current_password: PASSWORD, password, password_confirmation: password } }))
    expect<number>((await ok(cookie.accounts.user())).id).toBe(user.id)
    const bearer = await typedClient(app, { token: user.token })
    expect((await fails(bearer.accounts.user()))._tag).toBe("Unauthenticated")
  })
})

describe("POST /v1/auth/register with X-Session: cookie [D119]", () => {
  test("201 {data: {user}} with the two cookies and no token; the cookie signs the new user in", async () => {
    const email = freshEmail("cookie")
    const res = await app.post("/v1/auth/register", {
      headers: { ...anyAddress(), "x-session": "cookie" },
      body: { name: "Cookie Jar", email, password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(res.status).toBe(201)
    expect(res.body.success).toBe(true)
    expect(Object.keys(res.body.data)).toEqual(["user"])
    expect(res.body.data.user).toMatchObject({ name: "Cookie Jar", email })
    const cookies = setCookies(res.headers)
    expect(cookies["vpn_session"]!.attributes).toMatchObject({ httponly: "", samesite: "Strict", path: "/" })
    expect(cookies["vpn_csrf"]!.attributes["httponly"]).toBeUndefined()
    expect(res.text).not.toContain(cookies["vpn_session"]!.value.split("|")[1]!)
    const browser = { session: cookies["vpn_session"]!.value, csrf: cookies["vpn_csrf"]!.value }
    const cookie = await browserClient(browser)
    expect((await ok(cookie.accounts.currentSession())).user.email).toBe(email)
    const cookieWithCsrf = await browserClient(browser, browser.csrf)
    await ok(cookieWithCsrf.accounts.updateSettings({ payload: SETTINGS }))
    // without the header: the token in the body, no cookie, as the spec says
    const plain = await app.post("/v1/auth/register", {
      headers: anyAddress(),
      body: { name: "Plain", email: freshEmail("plain"), password: PASSWORD, password_confirmation: PASSWORD }
    })
    expect(plain.status).toBe(201)
    expect(typeof plain.body.data.token).toBe("string")
    expect(plain.headers.getSetCookie()).toEqual([])
  })
})

describe("Secure when APP_URL is https [D119]", () => {
  test("both cookies carry Secure", async () => {
    const secure = await makeTestApp({ reset: false, config: { appUrl: "https://vpn.example.com" } })
    try {
      const user = await register(app)
      const res = await secure.post("/v1/auth/session", { headers: anyAddress(), body: { email: user.email, password: PASSWORD } })
      expect(res.status).toBe(200)
      const cookies = setCookies(res.headers)
      expect(cookies["vpn_session"]!.attributes["secure"]).toBe("")
      expect(cookies["vpn_csrf"]!.attributes["secure"]).toBe("")
      // and the http app's do not
      const plain = setCookies((await app.post("/v1/auth/session", { headers: anyAddress(), body: { email: user.email, password: PASSWORD } })).headers)
      expect(plain["vpn_session"]!.attributes["secure"]).toBeUndefined()
    } finally {
      await secure.dispose()
    }
  })
})
