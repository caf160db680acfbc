import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Users } from "../../src/accounts/Users.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { freshEmail, PASSWORD, register, anyAddress } from "./helpers.ts"

// [D20] argon2id through a bounded pool; no account enumeration by login timing.
let app: TestApp
beforeAll(async () => {
  app = await makeTestApp({ config: { hashConcurrency: 2 } })
})
afterAll(() => app.dispose())

describe("password hashing pool", () => {
  test("at most hashConcurrency hashes run at once, however many requests arrive", async () => {
    const password = Bun.password as { hash: typeof Bun.password.hash }
    const original = password.hash
    let inFlight = 0
    let peak = 0
    password.hash = async (...args: Parameters<typeof Bun.password.hash>) => {
      inFlight++
      peak = Math.max(peak, inFlight)
      try {
        await Bun.sleep(30)
        return await original(...args)
      } finally {
        inFlight--
      }
    }
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () =>
        app.post("/v1/auth/register", { headers: anyAddress(),
          body: { name: "Pool", email: freshEmail("pool"), password: PASSWORD, password_confirmation: PASSWORD }
        })
      ))
      expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201])
    } finally {
      password.hash = original
    }
    expect(peak).toBe(2)
  }, 30_000)
})

describe("login timing [D20]", () => {
  const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

  test("an unknown e-mail costs the same argon2 verification as a wrong password", async () => {
    const user = await register(app)
    const timed = async (email: string, ip: string) => {
      const start = performance.now()
      const res = await app.post("/v1/auth/login", { body: { email, password: "Wrong-password-1" }, headers: { "x-forwarded-for": ip } })
      expect(res.status).toBe(401)
      return performance.now() - start
    }
    const known: Array<number> = []
    const unknown: Array<number> = []
    for (let i = 0; i < 3; i++) {
      known.push(await timed(user.email, `10.80.0.${i + 1}`))
      unknown.push(await timed(freshEmail("nobody"), `10.80.1.${i + 1}`))
    }
    // without the dummy verification an unknown e-mail answers in a few milliseconds (one query);
    // with it, in about the time of a real one (a quarter leaves room for a loaded machine's noise)
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.25)
  }, 30_000)

  test("a stored hash of other, cheaper parameters answers no sooner than a current one (rev. 2)", async () => {
    const current = await register(app)
    const email = freshEmail("cheap")
    const cheap = await Bun.password.hash(PASSWORD, { algorithm: "argon2id", memoryCost: 1024, timeCost: 1 })
    await app.run(Effect.flatMap(Users, (users) => users.insert({ name: "Cheap", email, passwordHash: cheap, now: new Date() })).pipe(
      Effect.provide(Users.Default)
    ))
    const timed = async (address: string, ip: string) => {
      const start = performance.now()
      const res = await app.post("/v1/auth/login", { body: { email: address, password: "Wrong-password-1" }, headers: { "x-forwarded-for": ip } })
      expect(res.status).toBe(401)
      return performance.now() - start
    }
    const known: Array<number> = []
    const legacy: Array<number> = []
    for (let i = 0; i < 3; i++) {
      known.push(await timed(current.email, `10.81.0.${i + 1}`))
      legacy.push(await timed(email, `10.81.1.${i + 1}`))
    }
    // verifying a 1 MiB, one-pass hash alone takes about a millisecond; beside a current-parameter
    // one, about the time of a real one (a quarter leaves room for a loaded machine's noise)
    expect(median(legacy)).toBeGreaterThan(median(known) * 0.25)
  }, 30_000)
})
