import { describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { loadConfig } from "../../src/platform/Config.ts"

// [D1]: every variable optional in development; a bad value is one line naming the variable.
const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(loadConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

describe("configuration [D1]", () => {
  test("defaults", () => {
    const config = Either.getOrThrow(load({}))
    expect(config.port).toBe(3000)
    expect(config.host).toBe("0.0.0.0")
    expect(config.publicUrl).toBe("http://localhost:3000")
    expect(config.appUrl).toBe("http://localhost:3000")
    expect(Option.isNone(config.databaseUrl)).toBe(true)
    expect(config.dataDir).toBe("./data")
    expect(config.mailFrom).toBe("VPN <no-reply@localhost>")
    expect(config.tokenTtlDays).toBe(30)
    expect(config.trustProxy).toBe(false)
    expect(config.generalRateLimit).toBe(120)
    expect(config.corsOrigins).toEqual([])
    expect(Option.isNone(config.paymentWebhookSecret)).toBe(true)
    expect(config.adminRequire2fa).toBe(false)
  })

  test("PUBLIC_URL follows PORT, APP_URL follows PUBLIC_URL", () => {
    expect(Either.getOrThrow(load({ PORT: "8080" })).publicUrl).toBe("http://localhost:8080")
    const c = Either.getOrThrow(load({ PUBLIC_URL: "https://api.example.com/" }))
    expect(c.publicUrl).toBe("https://api.example.com")
    expect(c.appUrl).toBe("https://api.example.com")
  })

  test("APP_KEY is 32 bytes of base64 and required with DATABASE_URL", () => {
    const key = Buffer.alloc(32, 1).toString("base64")
    const c = Either.getOrThrow(load({ DATABASE_URL: "postgres://u@h/db", APP_KEY: key }))
    expect(Option.map(c.appKey, (k) => Redacted.value(k).length)).toEqual(Option.some(32))
    expect(load({ DATABASE_URL: "postgres://u@h/db" })).toEqual(Either.left("Invalid configuration: APP_KEY: is required when DATABASE_URL is set"))
    expect(load({ APP_KEY: "short" })).toEqual(Either.left("Invalid configuration: APP_KEY: must be 32 random bytes, base64-encoded"))
  })

  test("multi-host database URLs and target_session_attrs are refused, pointing to a proxy [D126]", () => {
    const key = Buffer.alloc(32).toString("base64")
    for (const name of ["DATABASE_URL", "DATABASE_DIRECT_URL", "DATABASE_READ_URL"]) {
      expect(load({ [name]: "postgres://u:p@h1:5432,h2:5432/db", APP_KEY: key })).toEqual(
        Either.left(
          `Invalid configuration: ${name}: multi-host URLs are not supported; use one host: a proxy that follows the primary (HAProxy, PgBouncer) or the managed service's endpoint (docs/operations.md)`
        )
      )
      expect(load({ [name]: "postgres://u@h/db?target_session_attrs=read-write", APP_KEY: key })).toEqual(
        Either.left(
          `Invalid configuration: ${name}: target_session_attrs is not supported; use one host: a proxy that follows the primary (HAProxy, PgBouncer) or the managed service's endpoint (docs/operations.md)`
        )
      )
    }
    // a password with a comma is not a second host
    const ok = Either.getOrThrow(load({ DATABASE_URL: "postgres://u:a,b@h:5432/db", DATABASE_DIRECT_URL: "postgresql://u@h2/db", APP_KEY: key }))
    expect(Option.isSome(ok.databaseUrl)).toBe(true)
    expect(Option.isSome(ok.databaseDirectUrl!)).toBe(true)
  })

  test("DATABASE_READ_URL names the replicas of DATABASE_URL, which it needs [D126]", () => {
    const key = Buffer.alloc(32).toString("base64")
    const ok = Either.getOrThrow(load({ DATABASE_URL: "postgres://u@h/db", DATABASE_READ_URL: "postgres://u@h:5433/db", APP_KEY: key }))
    expect(Option.map(ok.databaseReadUrl!, Redacted.value)).toEqual(Option.some("postgres://u@h:5433/db"))
    expect(Option.isNone(Either.getOrThrow(load({ DATABASE_URL: "postgres://u@h/db", APP_KEY: key })).databaseReadUrl!)).toBe(true)
    for (const name of ["DATABASE_READ_URL", "DATABASE_DIRECT_URL"]) {
      expect(load({ [name]: "postgres://u@h:5433/db" })).toEqual(
        Either.left("Invalid configuration: DATABASE_DIRECT_URL, DATABASE_READ_URL: need DATABASE_URL (the primary)")
      )
    }
  })

  test.each([
    ["DATABASE_DIRECT_URL", "mysql://x"],
    ["DATABASE_READ_URL", "mysql://x"],
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["TOKEN_TTL_DAYS", "0"],
    ["GENERAL_RATE_LIMIT", "-1"],
    ["TRUST_PROXY", "maybe"],
    ["DATABASE_URL", "mysql://x"],
    ["SMTP_URL", "http://mail"],
    ["PUBLIC_URL", "not a url"],
    ["LOG_LEVEL", "loud"],
    ["ADMIN_REQUIRE_2FA", "maybe"]
  ])("a bad %s is one line naming it", (name, value) => {
    const result = load({ [name]: value, ...(name === "DATABASE_URL" ? { APP_KEY: Buffer.alloc(32).toString("base64") } : {}) })
    expect(Either.isLeft(result)).toBe(true)
    const line = Either.isLeft(result) ? result.left : ""
    expect(line.startsWith(`Invalid configuration: ${name}: `)).toBe(true)
    expect(line.includes("\n")).toBe(false)
  })

  test("TRUST_PROXY: true or 1 is one proxy, N is N, false or 0 none [D1] rev. 2", () => {
    const trust = (value: string) => Either.getOrThrow(load({ TRUST_PROXY: value })).trustProxy
    expect(trust("true")).toBe(1)
    expect(trust("1")).toBe(1)
    expect(trust("2")).toBe(2)
    expect(trust("false")).toBe(false)
    expect(trust("0")).toBe(false)
    for (const bad of ["-1", "1.5", "two", "100"]) {
      expect(load({ TRUST_PROXY: bad })).toEqual(
        Either.left("Invalid configuration: TRUST_PROXY: must be true, false or the number of proxies in front (1-32)")
      )
    }
  })

  test("ADMIN_REQUIRE_2FA is a boolean, false by default [D97]", () => {
    const required = (value: string) => Either.getOrThrow(load({ ADMIN_REQUIRE_2FA: value })).adminRequire2fa
    expect(required("true")).toBe(true)
    expect(required("1")).toBe(true)
    expect(required(" TRUE ")).toBe(true)
    expect(required("false")).toBe(false)
    expect(required("0")).toBe(false)
    expect(load({ ADMIN_REQUIRE_2FA: "2" })).toEqual(Either.left("Invalid configuration: ADMIN_REQUIRE_2FA: must be true or false"))
  })

  test("WEBHOOKS_ALLOW_PRIVATE is a boolean, false by default [D101]", () => {
    expect(Either.getOrThrow(load({})).webhooksAllowPrivate).toBe(false)
    expect(Either.getOrThrow(load({ WEBHOOKS_ALLOW_PRIVATE: "true" })).webhooksAllowPrivate).toBe(true)
    expect(Either.getOrThrow(load({ WEBHOOKS_ALLOW_PRIVATE: "false" })).webhooksAllowPrivate).toBe(false)
    expect(load({ WEBHOOKS_ALLOW_PRIVATE: "yes please" })).toEqual(Either.left("Invalid configuration: WEBHOOKS_ALLOW_PRIVATE: must be true or false"))
  })

  test("CORS_ORIGINS is a comma-separated list", () => {
    expect(Either.getOrThrow(load({ CORS_ORIGINS: "https://a.example, https://b.example/" })).corsOrigins).toEqual(["https://a.example", "https://b.example"])
  })
})
