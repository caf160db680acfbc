import { afterAll, beforeAll, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { makeTestApp, type TestApp } from "../support/app.ts"

// The contract is usable as a typed client (`HttpApiClient.make(Api)`): the same schemas decode
// the answers, declared errors come back as their tagged classes ([D10], [D11]).
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp()
})
afterAll(() => app.dispose())

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.either(effect))

test("register, then read the user through the typed client [D21]", async () => {
  const anonymous = await app.client()
  const email = `typed${Date.now().toString(36)}@example.com`
  const registered = await run(
    anonymous.accounts.register({
      payload: { name: "Typed Client", email, password: "Typed-Client-2026", password_confirmation: "Typed-Client-2026" }
    })
  )
  if (Either.isLeft(registered)) throw new Error(`register failed: ${String(registered.left)}`)
  expect(registered.right.user.email).toBe(email)

  if (!("token" in registered.right)) throw new Error("registration answered no token")
  const signedIn = await app.client(registered.right.token)
  const user = await run(signedIn.accounts.user())
  if (Either.isLeft(user)) throw new Error(`user failed: ${String(user.left)}`)
  expect(user.right).toMatchObject({ email, name: "Typed Client", role: "user", status: 1 })
})

test("declared errors decode to their classes: 401 Unauthenticated, 422 ValidationError with errors [D11] [D12]", async () => {
  const anonymous = await app.client()
  const unauthenticated = await run(anonymous.accounts.user())
  expect(Either.isLeft(unauthenticated) && unauthenticated.left._tag).toBe("Unauthenticated")

  // the client checks a payload against the schema before sending it: a malformed e-mail never leaves
  const malformed = await run(
    anonymous.accounts.register({
      payload: { name: "X", email: "not-an-email", password: "Typed-Client-2026", password_confirmation: "Typed-Client-2026" }
    })
  )
  expect(Either.isLeft(malformed) && malformed.left._tag).toBe("ParseError")

  // a rule only the server knows: the e-mail is taken
  const email = `taken${Date.now().toString(36)}@example.com`
  const payload = { name: "X", email, password: "Typed-Client-2026", password_confirmation: "Typed-Client-2026" }
  expect(Either.isRight(await run(anonymous.accounts.register({ payload })))).toBe(true)
  const taken = await run(anonymous.accounts.register({ payload }))
  if (Either.isRight(taken)) throw new Error("a taken e-mail registered")
  expect(taken.left._tag).toBe("ValidationError")
  if (taken.left._tag === "ValidationError") expect(taken.left.errors["email"]).toEqual(["The email has already been taken."])
})

test("the public catalogue through the typed client [D31]", async () => {
  const plans = await run((await app.client()).catalog.listPlans())
  expect(Either.isRight(plans)).toBe(true)
})
