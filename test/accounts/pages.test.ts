import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { PASSWORD, register, resetTokenOf, verifyTokenOf, waitForMail } from "./helpers.ts"

// [D26] the HTML pages behind the e-mailed links, outside /v1.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const NEW_PASSWORD = "Another-Str0ng-Secret"

/** a typed client without a token, from a client address of its own ([D30]) */
const from = (address: string) => typedClient(app, { headers: { "x-forwarded-for": address } })

const form = (fields: Record<string, string>) =>
  app.post("/reset-password", {
    raw: new URLSearchParams(fields).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html" }
  })

const expectAccessibleHtml = (res: { headers: Headers; text: string }) => {
  expect(res.headers.get("content-type")).toStartWith("text/html")
  expect(res.text).toStartWith("<!doctype html>")
  expect(res.text).toContain(`<html lang="en">`)
  expect(res.text).toMatch(/<title>[^<]+<\/title>/)
  expect(res.text).toMatch(/<h1>[^<]+<\/h1>/)
}

describe("GET /verify-email", () => {
  test("with a valid token: verifies and says so", async () => {
    const user = await register(app)
    const token = verifyTokenOf(await waitForMail(app, (m) => m.to === user.email))
    const res = await app.get(`/verify-email?token=${token}`, { headers: { accept: "text/html" } })
    expect(res.status).toBe(200)
    expectAccessibleHtml(res)
    expect(res.text).toContain("Email verified.")
    const me = await typedClient(app, { token: user.token })
    expect((await ok(me.accounts.user())).email_verified_at).toBeInstanceOf(Date)
    // single use: the second visit explains instead of verifying again
    const again = await app.get(`/verify-email?token=${token}`)
    expect(again.status).toBe(422)
    expectAccessibleHtml(again)
    expect(again.text).toContain("invalid")
  })

  test("without a token or with a bogus one: an explanatory page, never a dead link", async () => {
    for (const path of ["/verify-email", "/verify-email?token=bogus", `/verify-email?token=${"<script>".repeat(3)}`]) {
      const res = await app.get(path)
      expect(res.status).toBe(422)
      expectAccessibleHtml(res)
      expect(res.text).not.toContain("<script>")
    }
  })
})

describe("GET /reset-password and its form", () => {
  const resetToken = async (email: string, ip: string) => {
    const anonymous = await from(ip)
    await ok(anonymous.accounts.forgotPassword({ payload: { email } }))
    return resetTokenOf(await waitForMail(app, (m) => m.to === email && m.subject.toLowerCase().includes("reset")))
  }

  test("shows a labelled form that posts without JavaScript, the e-mail and token filled in (escaped)", async () => {
    const user = await register(app)
    const token = await resetToken(user.email, "10.70.0.1")
    const res = await app.get(`/reset-password?token=${token}&email=${encodeURIComponent(user.email)}`)
    expect(res.status).toBe(200)
    expectAccessibleHtml(res)
    expect(res.text).toContain(`<form method="post" action="/reset-password">`)
    for (const id of ["email", "password", "password_confirmation"]) {
      expect(res.text).toContain(`<label for="${id}">`)
      expect(res.text).toContain(`id="${id}"`)
    }
    expect(res.text).toContain(`name="token" value="${token}"`)
    expect(res.text).toContain(`value="${user.email}"`)
    const hostile = await app.get(`/reset-password?token=abc&email=${encodeURIComponent(`"><script>alert(1)</script>`)}`)
    expect(hostile.text).not.toContain("<script>alert(1)")
  })

  test("without a token the page explains the link is broken", async () => {
    const res = await app.get("/reset-password")
    expect(res.status).toBe(422)
    expectAccessibleHtml(res)
  })

  test("posting the form resets the password and revokes tokens", async () => {
    const user = await register(app)
    const token = await resetToken(user.email, "10.70.0.2")
    const res = await form({ token, email: user.email, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })
    expect(res.status).toBe(200)
    expectAccessibleHtml(res)
    expect(res.text).toContain("Password reset")
    expect((await app.get("/v1/user", { token: user.token })).status).toBe(401)
    const anonymous = await from("10.70.0.3")
    const login = await ok(anonymous.accounts.login({ payload: { email: user.email, password: NEW_PASSWORD } }))
    expect<number>(login.user.id).toBe(user.id)
    // the link is single-use
    const reuse = await form({ token, email: user.email, password: NEW_PASSWORD, password_confirmation: NEW_PASSWORD })
    expect(reuse.status).toBe(422)
    expect(reuse.text).toContain("invalid")
  })

  test("a bad form shows the API's messages and keeps the token for another try", async () => {
    // issue 34: the pages above counted against this address's reset-password limit; a new minute
    app.clock.advance(61_000)
    const user = await register(app)
    const token = await resetToken(user.email, "10.70.0.4")
    const res = await form({ token, email: user.email, password: "password", password_confirmation: "nope" })
    expect(res.status).toBe(422)
    expectAccessibleHtml(res)
    expect(res.text).toContain(`role="alert"`)
    expect(res.text).toContain("The password field is too common.")
    expect(res.text).toContain(`name="token" value="${token}"`)
    const mismatch = await form({ token, email: user.email, password: NEW_PASSWORD, password_confirmation: "nope-nope-nope" })
    expect(mismatch.text).toContain("The password field confirmation does not match.")
    // nothing changed yet
    const anonymous = await from("10.70.0.5")
    const login = await ok(anonymous.accounts.login({ payload: { email: user.email, password: PASSWORD } }))
    expect<number>(login.user.id).toBe(user.id)
  })
})
