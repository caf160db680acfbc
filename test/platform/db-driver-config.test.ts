import { describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Either } from "effect"
import { loadConfig } from "../../src/platform/Config.ts"

// DB_DRIVER (issue 8): Bun.SQL by default, `pg` for comparison; anything else stops start-up naming it.
const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(loadConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

describe("DB_DRIVER", () => {
  test("bun by default; bun or pg, in any case", () => {
    expect(Either.getOrThrow(load({})).dbDriver).toBe("bun")
    expect(Either.getOrThrow(load({ DB_DRIVER: "pg" })).dbDriver).toBe("pg")
    expect(Either.getOrThrow(load({ DB_DRIVER: " BUN " })).dbDriver).toBe("bun")
  })

  test("an unknown driver is a start-up error naming the variable", () => {
    expect(load({ DB_DRIVER: "postgres" })).toEqual(Either.left("Invalid configuration: DB_DRIVER: must be one of bun, pg"))
    expect(load({ DB_DRIVER: "" })).toEqual(Either.left("Invalid configuration: DB_DRIVER: must be one of bun, pg"))
  })
})
