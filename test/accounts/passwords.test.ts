import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Users } from "../../src/accounts/Users.ts"
import { makeTestApp, type TestApp } from "../support/app.ts"
import { ok, typedClient } from "../support/typed.ts"
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
      const clients = await Promise.all(Array.from({ length: 6 }, () => typedClient(app, { headers: anyAddress() })))
      // each a 201: the typed client decodes the declared status only
      const results = await Promise.all(
        clients.map((anonymous) =>
          ok(anonymous.accounts.register({ payload: { name: "Pool", email: freshEmail("pool"), password: PASSWORD, password_confirmation: PASSWORD } }))
        )
      )
      expect(results.map((r) => r.user.name)).toEqual(["Pool", "Pool", "Pool", "Pool", "Pool", "Pool"])
    } finally {
      password.hash = original
    }
    expect(peak).toBe(2)
  }, 30_000)
})

describe("login timing [D20]", () => {
  /** the parameters of every hash made now (Passwords.ARGON2ID) */
  const CURRENT = "$argon2id$v=19$m=19456,t=2,p=1"

  test("an unknown e-mail costs the same argon2 verification as a wrong password", async () => {
    const user = await register(app)
    // each argon2 verification a login runs, by the parameters of the hash it checks against (a
    // count, not a stopwatch: wall time on a busy machine says nothing either way)
    const password = Bun.password as { verify: typeof Bun.password.verify }
    const original = password.verify
    const verified: Array<string> = []
    password.verify = (...args: Parameters<typeof Bun.password.verify>) => {
      verified.push(String(args[1]).split("$").slice(0, 4).join("$"))
      return original(...args)
    }
    const attempt = async (email: string, ip: string) => {
      verified.length = 0
      const res = await app.post("/v1/auth/login", { body: { email, password: "Wrong-password-1" }, headers: { "x-forwarded-for": ip } })
      expect(res.status).toBe(401)
      return [...verified]
    }
    try {
      const known = await attempt(user.email, "10.80.0.1")
      const unknown = await attempt(freshEmail("nobody"), "10.80.1.1")
      // without the dummy verification an unknown e-mail runs none (one query, a few milliseconds)
      expect(known).toEqual([CURRENT])
      expect(unknown).toEqual(known)
    } finally {
      password.verify = original
    }
  }, 30_000)

  test("a stored hash of other, cheaper parameters answers no sooner than a current one (rev. 2)", async () => {
    const current = await register(app)
    const email = freshEmail("cheap")
    const cheap = await Bun.password.hash(PASSWORD, { algorithm: "argon2id", memoryCost: 1024, timeCost: 1 })
    await app.run(
      Effect.flatMap(Users, (users) => users.insert({ name: "Cheap", email, passwordHash: cheap, now: new Date() })).pipe(Effect.provide(Users.Default))
    )
    const password = Bun.password as { verify: typeof Bun.password.verify }
    const original = password.verify
    const verified: Array<string> = []
    password.verify = (...args: Parameters<typeof Bun.password.verify>) => {
      verified.push(String(args[1]).split("$").slice(0, 4).join("$"))
      return original(...args)
    }
    const attempt = async (address: string, ip: string) => {
      verified.length = 0
      const res = await app.post("/v1/auth/login", { body: { email: address, password: "Wrong-password-1" }, headers: { "x-forwarded-for": ip } })
      expect(res.status).toBe(401)
      return [...verified]
    }
    try {
      expect(await attempt(current.email, "10.81.0.1")).toEqual([CURRENT])
      // verifying a 1 MiB, one-pass hash alone takes about a millisecond: a verification with the
      // current parameters runs beside it, so the answer comes no sooner than a current one's
      const legacy = await attempt(email, "10.81.1.1")
      expect(legacy).toContain("$argon2id$v=19$m=1024,t=1,p=1")
      expect(legacy).toContain(CURRENT)
    } finally {
      password.verify = original
    }
  }, 30_000)
})
