import { describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Either, Option, Redacted } from "effect"
import { stripeOptions } from "../../src/billing/gateways/Stripe.ts"
import { loadConfig } from "../../src/platform/Config.ts"

// [D112] [D113]: the Stripe keys, STRIPE_API_URL, DEFAULT_GATEWAY and the seller's COMPANY_* lines.
const load = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(loadConfig.pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))))

const STRIPE = { STRIPE_SECRET_KEY: "sk_test_1", STRIPE_WEBHOOK_SECRET: "whsec_1" }

describe("billing configuration [D112] [D113]", () => {
  test("Stripe is enabled by both keys; one alone stops start-up; none: disabled", () => {
    expect(Either.getOrThrow(load({})).stripe).toEqual(Option.none())
    const c = Either.getOrThrow(load({ ...STRIPE, STRIPE_API_URL: "http://127.0.0.1:12111/" }))
    const stripe = Option.getOrThrow(c.stripe!)
    expect(Redacted.value(stripe.secretKey)).toBe("sk_test_1")
    expect(Redacted.value(stripe.webhookSecret)).toBe("whsec_1")
    expect(stripe.apiUrl).toEqual(Option.some("http://127.0.0.1:12111"))
    // the keys never print
    expect(JSON.stringify(c)).not.toContain("sk_test_1")
    expect(load({ STRIPE_SECRET_KEY: "sk_test_1" })).toEqual(
      Either.left("Invalid configuration: STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET: set both to enable Stripe, or neither")
    )
    expect(load({ ...STRIPE, STRIPE_API_URL: "ftp://x" })).toEqual(Either.left("Invalid configuration: STRIPE_API_URL: must be an absolute http(s) URL"))
  })

  test("DEFAULT_GATEWAY: manual by default; stripe only when Stripe is configured", () => {
    expect(Either.getOrThrow(load({})).defaultGateway).toBe("manual")
    expect(Either.getOrThrow(load({ ...STRIPE, DEFAULT_GATEWAY: "Stripe" })).defaultGateway).toBe("stripe")
    const refused = "Invalid configuration: DEFAULT_GATEWAY: must be an enabled gateway (manual, or stripe or cryptobot when it is configured)"
    expect(load({ DEFAULT_GATEWAY: "stripe" })).toEqual(Either.left(refused))
    expect(load({ ...STRIPE, DEFAULT_GATEWAY: "paypal" })).toEqual(Either.left(refused))
  })

  test("COMPANY_NAME, COMPANY_ADDRESS (\\n is a line break), COMPANY_TAX_ID: each optional", () => {
    expect(Either.getOrThrow(load({})).company).toEqual({ name: Option.none(), address: Option.none(), taxId: Option.none() })
    const c = Either.getOrThrow(load({ COMPANY_NAME: "Acme VPN Ltd", COMPANY_ADDRESS: "1 Main St\\nSpringfield", COMPANY_TAX_ID: "GB123" }))
    expect(c.company).toEqual({ name: Option.some("Acme VPN Ltd"), address: Option.some("1 Main St\nSpringfield"), taxId: Option.some("GB123") })
  })

  test("STRIPE_API_URL becomes the package's host, port and protocol; none: Stripe's own host", () => {
    expect(stripeOptions(Option.some("http://127.0.0.1:12111"))).toMatchObject({ host: "127.0.0.1", port: 12111, protocol: "http" })
    expect(stripeOptions(Option.some("https://stripe-mock.internal"))).toMatchObject({ host: "stripe-mock.internal", port: 443, protocol: "https" })
    expect(stripeOptions(Option.some("http://stand-in"))).toMatchObject({ port: 80, protocol: "http" })
    const real = stripeOptions(Option.none())
    expect("host" in real).toBe(false)
  })
})

describe("gateway and dunning configuration [D123] [D124]", () => {
  test("CRYPTOBOT_TOKEN enables cryptobot; CRYPTOBOT_API_URL defaults to the mainnet; CRYPTOBOT_ASSETS to USDT,TON,BTC", () => {
    expect(Either.getOrThrow(load({})).cryptobot).toEqual(Option.none())
    const plain = Option.getOrThrow(Either.getOrThrow(load({ CRYPTOBOT_TOKEN: "1234:AAA" })).cryptobot!)
    expect(Redacted.value(plain.token)).toBe("1234:AAA")
    expect(plain.apiUrl).toBe("https://pay.crypt.bot/api")
    expect(plain.assets).toEqual(["USDT", "TON", "BTC"])
    const set = Option.getOrThrow(
      Either.getOrThrow(load({ CRYPTOBOT_TOKEN: "1:x", CRYPTOBOT_API_URL: "http://127.0.0.1:9/api/", CRYPTOBOT_ASSETS: "usdt, ton" })).cryptobot!
    )
    expect(set.apiUrl).toBe("http://127.0.0.1:9/api")
    expect(set.assets).toEqual(["USDT", "TON"])
    expect(JSON.stringify(Either.getOrThrow(load({ CRYPTOBOT_TOKEN: "1234:AAA" })))).not.toContain("1234:AAA")
    expect(Either.getOrThrow(load({ CRYPTOBOT_TOKEN: "1:x", DEFAULT_GATEWAY: "cryptobot" })).defaultGateway).toBe("cryptobot")
    expect(Either.isLeft(load({ DEFAULT_GATEWAY: "cryptobot" }))).toBe(true)
    expect(load({ CRYPTOBOT_TOKEN: "1:x", CRYPTOBOT_ASSETS: "USDT,$$" })).toEqual(
      Either.left("Invalid configuration: CRYPTOBOT_ASSETS: must be a comma-separated list of asset codes (USDT,TON,BTC)")
    )
  })

  test("DUNNING_RETRY_DAYS (decimals allowed, growing), GRACE_SPEED_MBPS, JOBS_INTERVAL_SECONDS and their defaults", () => {
    const plain = Either.getOrThrow(load({}))
    expect(plain.dunningRetryDays).toEqual([1, 3, 5])
    expect(plain.graceSpeedMbps).toBe(1)
    expect(plain.jobsIntervalSeconds).toBe(60)
    const set = Either.getOrThrow(load({ DUNNING_RETRY_DAYS: "0.00002, 0.00004,0.00006", GRACE_SPEED_MBPS: "3", JOBS_INTERVAL_SECONDS: "1" }))
    expect(set.dunningRetryDays).toEqual([0.00002, 0.00004, 0.00006])
    expect(set.graceSpeedMbps).toBe(3)
    expect(set.jobsIntervalSeconds).toBe(1)
    for (const bad of ["", "3,1", "1,,3", "-1", "0", "a"]) {
      expect(load({ DUNNING_RETRY_DAYS: bad })).toEqual(
        Either.left("Invalid configuration: DUNNING_RETRY_DAYS: must be growing positive numbers of days, comma-separated (1,3,5)")
      )
    }
    expect(Either.isLeft(load({ GRACE_SPEED_MBPS: "0" }))).toBe(true)
    expect(Either.isLeft(load({ JOBS_INTERVAL_SECONDS: "0" }))).toBe(true)
  })
})
