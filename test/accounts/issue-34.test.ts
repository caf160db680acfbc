import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
import { anyAddress, PASSWORD } from "./helpers.ts"

// Issue 34: the accounts items of the outside suites, through the HTTP API.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

describe("[D117] made precise: every request to the HTML /reset-password page counts", () => {
  test("GET /reset-password and POST /v1/auth/reset-password share 6 a minute per address", async () => {
    const address = anyAddress()
    for (let i = 0; i < 3; i++) {
      const page = await app.get(`/reset-password?token=guess${i}&email=someone%40example.test`, { headers: { ...address, accept: "text/html" } })
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toContain("text/html")
    }
    for (let i = 0; i < 3; i++) {
      const api = await app.post("/v1/auth/reset-password", {
        headers: address,
        body: { token: `guess-api${i}`, email: "someone@example.test", password: PASSWORD, password_confirmation: PASSWORD }
      })
      expect(api.status).toBe(422)
    }
    const page = await app.get("/reset-password?token=guess-last", { headers: { ...address, accept: "text/html" } })
    expect(page.status).toBe(429)
    expect(page.headers.get("retry-after")).not.toBeNull()
    expect(
      (
        await app.post("/v1/auth/reset-password", {
          headers: address,
          body: { token: "guess-more", email: "someone@example.test", password: PASSWORD, password_confirmation: PASSWORD }
        })
      ).status
    ).toBe(429)
    // another address is not held back
    expect((await app.get("/reset-password?token=t", { headers: { ...anyAddress(), accept: "text/html" } })).status).toBe(200)
  })
})

describe("an e-mail's local part is a dot-atom", () => {
  test("a dot first, last or twice in a row is 422 The email field must be a valid email address.", async () => {
    for (const email of [".user@example.com", "user.@example.com", "us..er@example.com"]) {
      const res = await app.post("/v1/auth/register", {
        headers: anyAddress(),
        body: { name: "Dot", email, password: PASSWORD, password_confirmation: PASSWORD }
      })
      expect({ email, status: res.status, errors: res.body.errors }).toEqual({
        email,
        status: 422,
        errors: { email: ["The email field must be a valid email address."] }
      })
    }
    const anonymous = await typedClient(app, { headers: anyAddress() })
    const fine = await ok(
      anonymous.accounts.register({ payload: { name: "Dot", email: "first.last@example.com", password: PASSWORD, password_confirmation: PASSWORD } })
    )
    expect(fine.user.email).toBe("first.last@example.com")
  })
})
