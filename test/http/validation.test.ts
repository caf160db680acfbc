import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { makeTestApp, type TestApp } from "../support/app.ts"

// [D11] [D12]: the framework's validation cases, through real endpoints.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

describe("422 in the envelope [D12]", () => {
  test("a body that is not JSON is 422 with errors.body", async () => {
    const res = await app.post("/v1/auth/register", { raw: "{not json" })
    expect(res.status).toBe(422)
    expect(res.body).toEqual({ success: false, message: "The given data was invalid.", errors: { body: ["The body must be valid JSON."] } })
  })

  test("a JSON body that is not an object is 422 with errors.body", async () => {
    const res = await app.post("/v1/auth/register", { raw: "[1,2]" })
    expect(res.status).toBe(422)
    expect(res.body.errors.body).toHaveLength(1)
  })

  test("every bad field is reported at once, snake_case as sent, Laravel's wording", async () => {
    const res = await app.post("/v1/auth/register", { body: { email: "nope", password: "short", password_confirmation: "other" } })
    expect(res.status).toBe(422)
    expect(res.body.message).toBe("The given data was invalid.")
    expect(res.body.errors.name).toEqual(["The name field is required."])
    expect(res.body.errors.email).toEqual(["The email field must be a valid email address."])
    expect(res.body.errors.password[0]).toBe("The password field must be at least 8 characters.")
  })

  test("a NUL character is a 422 for its field, never a 500 (fuzz regression)", async () => {
    const user = await app.createUser()
    const res = await app.put("/v1/account/profile", { token: user.token, body: { name: "a\u0000b" } })
    expect(res.status).toBe(422)
    expect(Object.keys(res.body.errors)).toEqual(["name"])
  })
})

describe("401 [D11] [D20]", () => {
  test.each([
    ["no header", undefined],
    ["empty", ""],
    ["scheme only", "Bearer"],
    ["a pipe", "Bearer |"],
    ["not a token", "Bearer 1ABC|x"],
    ["unknown token", `Bearer 999|${"a".repeat(40)}`],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["10 kB", `Bearer ${"a".repeat(10_000)}`]
  ])("%s is 401 Unauthenticated.", async (_, header) => {
    const res = await app.get("/v1/user", { headers: header === undefined ? {} : { authorization: header } })
    expect(res.status).toBe(401)
    expect(res.body).toEqual({ success: false, message: "Unauthenticated." })
  })

  test("the scheme is case-insensitive; a live token passes", async () => {
    const user = await app.createUser()
    expect((await app.get("/v1/user", { headers: { authorization: `bearer ${user.token}` } })).status).toBe(200)
    expect((await app.get("/v1/user", { headers: { authorization: `Basic ${user.token}` } })).status).toBe(401)
  })
})

describe("404 for impossible ids [D11]", () => {
  test.each(["abc", "0", "-1", "1.5", "99999999999"])("GET /v1/plans/%s is 404", async (id) => {
    const res = await app.get(`/v1/plans/${id}`)
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ success: false, message: "Resource not found." })
  })
})

describe("500 [D11]", () => {
  test("a defect is 500 with nothing internal in the body", async () => {
    await app.sql`alter table plans rename to plans_away`
    try {
      const res = await app.get("/v1/plans")
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ success: false, message: "An unexpected error occurred." })
    } finally {
      await app.sql`alter table plans_away rename to plans`
    }
  })
})
