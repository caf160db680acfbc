import { describe, expect, test } from "bun:test"
import { HASH_NICE, hashingThreadNices, lowerHashingThreads } from "../../src/platform/HashPriority.ts"
import { makeTestApp } from "../support/app.ts"

// issue 8: hashing never takes the CPU from the event loop; the pool's threads run at nice 10.
describe.skipIf(process.platform !== "linux")("hashing threads' priority", () => {
  test("a login through the API leaves every hashing thread at HASH_NICE", async () => {
    const app = await makeTestApp()
    try {
      const user = await app.createUser()
      const res = await app.post("/v1/auth/login", { body: { email: user.email, password: user.password } })
      expect(res.status).toBe(200)
      const nices = hashingThreadNices()
      expect(nices.length).toBeGreaterThan(0)
      for (const t of nices) expect(t.nice).toBe(HASH_NICE)
    } finally {
      await app.dispose()
    }
  })

  test("every Bun pool thread that hashed runs at HASH_NICE; the main thread keeps its priority", async () => {
    // the main thread's priority before (0, or what the runner was started with: `nice -n 19 bun test`)
    const mainNice = () => Number(require("node:fs").readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ")[16])
    const before = mainNice()
    const encoded = await Bun.password.hash("x", { algorithm: "argon2id", memoryCost: 1024, timeCost: 1 })
    await Promise.all(Array.from({ length: 4 }, () => Bun.password.verify("x", encoded)))
    lowerHashingThreads()
    const nices = hashingThreadNices()
    expect(nices.length).toBeGreaterThan(0)
    for (const t of nices) expect(t.nice).toBe(HASH_NICE)
    expect(mainNice()).toBe(before)
  })
})
