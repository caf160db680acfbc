import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { booleanFlag, databaseUrlOf, decodeKey, levels, optionalString, parseTrustProxy, positiveInt, trailingSlashless, urlString } from "./ConfigReaders.ts"

// the readers live in ConfigReaders.ts; what other modules imported from here stays exported
export { databaseUrlProblem } from "./ConfigReaders.ts"

/**
 * The whole configuration of [D1], read once from the environment.
 * A bad value stops start-up with one line naming the variable.
 */
export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly publicUrl: string
  readonly appUrl: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /**
   * `DATABASE_DIRECT_URL` ([D126]): a direct connection (not through a transaction pooler) for
   * `LISTEN` and the migrations' session lock; set when `DATABASE_URL` goes through PgBouncer in
   * transaction mode, which also turns prepared statements off. Absent (tests): `DATABASE_URL`.
   */
  readonly databaseDirectUrl?: Option.Option<Redacted.Redacted<string>>
  /**
   * `DATABASE_READ_URL` ([D126]): replicas for the reads that may lag (usage history and summary,
   * admin lists and search, the audit log, reports), through `ReadSql`. Absent: the primary.
   */
  readonly databaseReadUrl?: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  /** 32 bytes; absent only in embedded mode before the generated key is loaded */
  readonly appKey: Option.Option<Redacted.Redacted<Uint8Array>>
  readonly smtpUrl: Option.Option<Redacted.Redacted<string>>
  readonly mailFrom: string
  readonly adminEmail: Option.Option<string>
  readonly adminPassword: Option.Option<Redacted.Redacted<string>>
  readonly tokenTtlDays: number
  /**
   * proxies in front that append to `X-Forwarded-For` ([D1] rev. 2): `false` for none (the
   * socket's address), N for N (the N-th entry from the right is the client)
   */
  readonly trustProxy: false | number
  readonly generalRateLimit: number
  readonly corsOrigins: ReadonlyArray<string>
  readonly paymentWebhookSecret: Option.Option<Redacted.Redacted<string>>
  /** `ADMIN_REQUIRE_2FA` ([D97]): admin routes refuse an admin without two-factor sign-in */
  readonly adminRequire2fa: boolean
  /** the bearer token of `GET /metrics` ([D102]); absent: loopback clients only */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /**
   * `WEBHOOKS_ALLOW_PRIVATE` ([D101]): outgoing webhooks may reach loopback and private addresses
   * (and `http://` only to those); default false: no request to such an address at all
   */
  readonly webhooksAllowPrivate?: boolean
  readonly logLevel: LogLevel.LogLevel
  /**
   * threads hashing passwords at once (issue 8); not in [D1]. Defaults to the core count less one
   * (at least 1): the event loop and the database keep a core while a login flood runs.
   */
  readonly hashConcurrency: number
  /**
   * `JOBS_PAUSE` (issue 27): after each batch the jobs of [D80] wait this many percent of the
   * batch's time, leaving the cores to requests; absent (tests): JOBS_PAUSE_DEFAULT
   */
  readonly jobsPausePercent?: number
  /** `PORTAL` ([D118]): the portal at `/` and the console at `/admin/`; absent (tests, CLI): off */
  readonly portal?: boolean
  /** `DB_DRIVER` (issue 8), not in [D1]; absent (fixed configurations of tests and the CLI): `bun` */
  readonly dbDriver?: DbDriver
  /** [D112]: the `stripe` gateway, enabled when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are set */
  readonly stripe?: Option.Option<StripeConfig>
  /** [D112] `DEFAULT_GATEWAY`: an order's gateway when it names none; absent: `manual` */
  readonly defaultGateway?: string
  /** [D113]: the seller on invoice PDFs, each line optional */
  readonly company?: CompanyConfig
  /** [D123]: the `cryptobot` gateway, enabled when CRYPTOBOT_TOKEN is set */
  readonly cryptobot?: Option.Option<CryptoBotConfig>
  /** [D80] [D124] `JOBS_INTERVAL_SECONDS`: the jobs run this often; absent: 60 */
  readonly jobsIntervalSeconds?: number
  /** [D124] `DUNNING_RETRY_DAYS`: a failed renewal is retried these many days after expires_at; absent: 1, 3, 5 */
  readonly dunningRetryDays?: ReadonlyArray<number>
  /** [D124] `GRACE_SPEED_MBPS`: the speed of a service in grace; absent: 1 */
  readonly graceSpeedMbps?: number
  /** [D125]: Telegram, enabled when TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET are set */
  readonly telegram?: Option.Option<TelegramConfig>
}

export interface CryptoBotConfig {
  readonly token: Redacted.Redacted<string>
  /** `CRYPTOBOT_API_URL`: the base URL the API's methods live under (`$URL/createInvoice`) */
  readonly apiUrl: string
  /** `CRYPTOBOT_ASSETS`: the crypto assets a payer may pay in */
  readonly assets: ReadonlyArray<string>
}

/** [D124]: the defaults of DUNNING_RETRY_DAYS, GRACE_SPEED_MBPS and JOBS_INTERVAL_SECONDS */
export const DUNNING_RETRY_DAYS_DEFAULT: ReadonlyArray<number> = [1, 3, 5]
export const GRACE_SPEED_MBPS_DEFAULT = 1
export const JOBS_INTERVAL_SECONDS_DEFAULT = 60
/** [D123]: CryptoBot's mainnet API */
export const CRYPTOBOT_API_URL_DEFAULT = "https://pay.crypt.bot/api"
export const CRYPTOBOT_ASSETS_DEFAULT: ReadonlyArray<string> = ["USDT", "TON", "BTC"]

/** `1,3,5` or `0.0001,0.0002`: positive, strictly growing numbers of days; undefined when not */
export const parseRetryDays = (raw: string): ReadonlyArray<number> | undefined => {
  const parts = raw.split(",").map((p) => p.trim())
  if (parts.length === 0 || parts.length > 20 || !parts.every((p) => /^\d{1,4}(\.\d{1,9})?$/.test(p))) return undefined
  const days = parts.map(Number)
  return days.every((d, i) => d > 0 && (i === 0 || d > days[i - 1]!)) ? days : undefined
}

export interface TelegramConfig {
  readonly botToken: Redacted.Redacted<string>
  /** what the Bot API sends in `X-Telegram-Bot-Api-Secret-Token` (set with `setWebhook`'s `secret_token`) */
  readonly webhookSecret: Redacted.Redacted<string>
  /** `TELEGRAM_API_URL`: another Bot API host (a local stand-in in tests); none: Telegram's own */
  readonly apiUrl: Option.Option<string>
}

export interface StripeConfig {
  readonly secretKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
  /** `STRIPE_API_URL`: another host for the package (a local stand-in in tests); none: Stripe's own */
  readonly apiUrl: Option.Option<string>
}

export interface CompanyConfig {
  readonly name: Option.Option<string>
  readonly address: Option.Option<string>
  readonly taxId: Option.Option<string>
}

/** the PostgreSQL driver (issue 8): Bun's native `Bun.SQL`, or `pg` (the driver of before, for comparison) */
export type DbDriver = "bun" | "pg"
export const dbDrivers: ReadonlyArray<DbDriver> = ["bun", "pg"]

/** `JOBS_PAUSE`'s default: the jobs wait as long as each batch took (a 50 % duty cycle, issue 27) */
export const JOBS_PAUSE_DEFAULT = 100

export class AppConfig extends Context.Tag("AppConfig")<AppConfig, AppConfigShape>() {
  /** a layer holding a fixed configuration (tests, CLI) */
  static readonly layer = (config: AppConfigShape) => Layer.succeed(AppConfig, config)
}

export const appConfig = Config.all({
  port: positiveInt("PORT", 3000, 0).pipe(Config.validate({ message: "PORT: must be a port number (0-65535)", validation: (n) => n <= 65535 })),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  publicUrl: urlString("PUBLIC_URL"),
  appUrl: urlString("APP_URL"),
  databaseUrl: databaseUrlOf("DATABASE_URL"),
  databaseDirectUrl: databaseUrlOf("DATABASE_DIRECT_URL"),
  databaseReadUrl: databaseUrlOf("DATABASE_READ_URL"),
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  appKey: optionalString("APP_KEY").pipe(
    Config.validate({
      message: "APP_KEY: must be 32 random bytes, base64-encoded",
      validation: Option.match({ onNone: () => true, onSome: (s) => decodeKey(s) !== undefined })
    }),
    Config.map(Option.map((s) => Redacted.make(decodeKey(s)!)))
  ),
  smtpUrl: optionalString("SMTP_URL").pipe(
    Config.validate({
      message: "SMTP_URL: must be an smtp:// or smtps:// URL",
      validation: Option.match({ onNone: () => true, onSome: (s) => /^smtps?:\/\/[^/]/.test(s) })
    }),
    Config.map(Option.map(Redacted.make))
  ),
  mailFrom: Config.string("MAIL_FROM").pipe(Config.withDefault("VPN <no-reply@localhost>")),
  adminEmail: optionalString("ADMIN_EMAIL").pipe(Config.map(Option.map((s) => s.toLowerCase()))),
  adminPassword: optionalString("ADMIN_PASSWORD").pipe(Config.map(Option.map(Redacted.make))),
  tokenTtlDays: positiveInt("TOKEN_TTL_DAYS", 30),
  trustProxy: Config.string("TRUST_PROXY").pipe(
    Config.withDefault("false"),
    Config.map((s) => s.trim().toLowerCase()),
    Config.validate({
      message: "TRUST_PROXY: must be true, false or the number of proxies in front (1-32)",
      validation: (s) => parseTrustProxy(s) !== undefined
    }),
    Config.map((s) => parseTrustProxy(s)!)
  ),
  generalRateLimit: positiveInt("GENERAL_RATE_LIMIT", 120, 0),
  corsOrigins: optionalString("CORS_ORIGINS").pipe(
    Config.map(
      Option.match({
        onNone: () => [] as ReadonlyArray<string>,
        onSome: (s) =>
          s
            .split(",")
            .map((o) => trailingSlashless(o.trim()))
            .filter((o) => o.length > 0)
      })
    )
  ),
  paymentWebhookSecret: optionalString("PAYMENT_WEBHOOK_SECRET").pipe(Config.map(Option.map(Redacted.make))),
  adminRequire2fa: booleanFlag("ADMIN_REQUIRE_2FA", false),
  metricsToken: optionalString("METRICS_TOKEN").pipe(
    Config.validate({
      message: "METRICS_TOKEN: must be 16 to 512 visible ASCII characters (no spaces)",
      validation: Option.match({ onNone: () => true, onSome: (s) => /^[\x21-\x7e]{16,512}$/.test(s) })
    }),
    Config.map(Option.map(Redacted.make))
  ),
  webhooksAllowPrivate: booleanFlag("WEBHOOKS_ALLOW_PRIVATE", false),
  logLevel: Config.string("LOG_LEVEL").pipe(
    Config.withDefault("info"),
    Config.map((s) => s.trim().toLowerCase()),
    Config.validate({ message: `LOG_LEVEL: must be one of ${Object.keys(levels).join(", ")}`, validation: (s) => s in levels }),
    Config.map((s) => levels[s]!)
  ),
  portal: booleanFlag("PORTAL", true),
  hashConcurrency: positiveInt("HASH_CONCURRENCY", Math.max(1, (navigator.hardwareConcurrency || 2) - 1)),
  jobsPausePercent: positiveInt("JOBS_PAUSE", JOBS_PAUSE_DEFAULT, 0),
  dbDriver: Config.string("DB_DRIVER").pipe(
    Config.withDefault("bun"),
    Config.map((s) => s.trim().toLowerCase()),
    Config.validate({
      message: `DB_DRIVER: must be one of ${dbDrivers.join(", ")}`,
      validation: (s) => (dbDrivers as ReadonlyArray<string>).includes(s)
    }),
    Config.map((s) => s as DbDriver)
  ),
  stripeSecretKey: optionalString("STRIPE_SECRET_KEY").pipe(Config.map(Option.map(Redacted.make))),
  stripeWebhookSecret: optionalString("STRIPE_WEBHOOK_SECRET").pipe(Config.map(Option.map(Redacted.make))),
  stripeApiUrl: urlString("STRIPE_API_URL"),
  defaultGateway: optionalString("DEFAULT_GATEWAY").pipe(Config.map(Option.map((s) => s.toLowerCase()))),
  cryptobotToken: optionalString("CRYPTOBOT_TOKEN").pipe(Config.map(Option.map(Redacted.make))),
  cryptobotApiUrl: urlString("CRYPTOBOT_API_URL"),
  cryptobotAssets: optionalString("CRYPTOBOT_ASSETS").pipe(
    Config.map(
      Option.map((s) =>
        s
          .split(",")
          .map((a) => a.trim().toUpperCase())
          .filter((a) => a.length > 0)
      )
    ),
    Config.validate({
      message: "CRYPTOBOT_ASSETS: must be a comma-separated list of asset codes (USDT,TON,BTC)",
      validation: Option.match({ onNone: () => true, onSome: (list) => list.length > 0 && list.every((a) => /^[A-Z0-9]{2,10}$/.test(a)) })
    })
  ),
  jobsIntervalSeconds: positiveInt("JOBS_INTERVAL_SECONDS", JOBS_INTERVAL_SECONDS_DEFAULT),
  dunningRetryDays: Config.string("DUNNING_RETRY_DAYS").pipe(
    Config.withDefault(DUNNING_RETRY_DAYS_DEFAULT.join(",")),
    Config.validate({
      message: "DUNNING_RETRY_DAYS: must be growing positive numbers of days, comma-separated (1,3,5)",
      validation: (s) => parseRetryDays(s) !== undefined
    }),
    Config.map((s) => parseRetryDays(s)!)
  ),
  graceSpeedMbps: positiveInt("GRACE_SPEED_MBPS", GRACE_SPEED_MBPS_DEFAULT),
  telegramBotToken: optionalString("TELEGRAM_BOT_TOKEN").pipe(
    Config.validate({
      message: "TELEGRAM_BOT_TOKEN: must be a bot token as @BotFather gives it (<digits>:<letters, digits, _ or ->)",
      validation: Option.match({ onNone: () => true, onSome: (s) => /^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$/.test(s) })
    }),
    Config.map(Option.map(Redacted.make))
  ),
  telegramWebhookSecret: optionalString("TELEGRAM_WEBHOOK_SECRET").pipe(
    Config.validate({
      // what the Bot API accepts as setWebhook's secret_token
      message: "TELEGRAM_WEBHOOK_SECRET: must be 1-256 characters of A-Z, a-z, 0-9, _ and -",
      validation: Option.match({ onNone: () => true, onSome: (s) => /^[A-Za-z0-9_-]{1,256}$/.test(s) })
    }),
    Config.map(Option.map(Redacted.make))
  ),
  telegramApiUrl: urlString("TELEGRAM_API_URL"),
  company: Config.all({
    name: optionalString("COMPANY_NAME"),
    // a literal `\n` in an env file is a line break of the address
    address: optionalString("COMPANY_ADDRESS").pipe(Config.map(Option.map((s) => s.replaceAll("\\n", "\n")))),
    taxId: optionalString("COMPANY_TAX_ID")
  })
}).pipe(
  Config.validate({
    message: "STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET: set both to enable Stripe, or neither",
    validation: (c) => Option.isSome(c.stripeSecretKey) === Option.isSome(c.stripeWebhookSecret)
  }),
  Config.validate({
    message: "DEFAULT_GATEWAY: must be an enabled gateway (manual, or stripe or cryptobot when it is configured)",
    validation: (c) =>
      Option.match(c.defaultGateway, {
        onNone: () => true,
        onSome: (g) => g === "manual" || (g === "stripe" && Option.isSome(c.stripeSecretKey)) || (g === "cryptobot" && Option.isSome(c.cryptobotToken))
      })
  }),
  Config.validate({
    message: "TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET: set both to enable Telegram, or neither",
    validation: (c) => Option.isSome(c.telegramBotToken) === Option.isSome(c.telegramWebhookSecret)
  }),
  Config.map(
    ({
      cryptobotApiUrl,
      cryptobotAssets,
      cryptobotToken,
      defaultGateway,
      stripeApiUrl,
      stripeSecretKey,
      stripeWebhookSecret,
      telegramApiUrl,
      telegramBotToken,
      telegramWebhookSecret,
      ...c
    }): AppConfigShape => {
      const publicUrl = trailingSlashless(Option.getOrElse(c.publicUrl, () => `http://localhost:${c.port}`))
      return {
        ...c,
        stripe: Option.all({ secretKey: stripeSecretKey, webhookSecret: stripeWebhookSecret }).pipe(
          Option.map((keys) => ({ ...keys, apiUrl: Option.map(stripeApiUrl, trailingSlashless) }))
        ),
        cryptobot: Option.map(cryptobotToken, (token) => ({
          token,
          apiUrl: trailingSlashless(Option.getOrElse(cryptobotApiUrl, () => CRYPTOBOT_API_URL_DEFAULT)),
          assets: Option.getOrElse(cryptobotAssets, () => CRYPTOBOT_ASSETS_DEFAULT)
        })),
        defaultGateway: Option.getOrElse(defaultGateway, () => "manual"),
        telegram: Option.all({ botToken: telegramBotToken, webhookSecret: telegramWebhookSecret }).pipe(
          Option.map((keys) => ({ ...keys, apiUrl: Option.map(telegramApiUrl, trailingSlashless) }))
        ),
        publicUrl,
        appUrl: trailingSlashless(Option.getOrElse(c.appUrl, () => publicUrl))
      }
    }
  ),
  Config.validate({
    message: "DATABASE_DIRECT_URL, DATABASE_READ_URL: need DATABASE_URL (the primary)",
    validation: (c) =>
      Option.isSome(c.databaseUrl) || (Option.isNone(c.databaseDirectUrl ?? Option.none()) && Option.isNone(c.databaseReadUrl ?? Option.none()))
  }),
  Config.validate({
    message: "APP_KEY: is required when DATABASE_URL is set",
    validation: (c) => Option.isNone(c.databaseUrl) || Option.isSome(c.appKey)
  })
)

/**
 * The URL of a direct session to PostgreSQL ([D126]): `DATABASE_DIRECT_URL`, else `DATABASE_URL`;
 * none on the embedded database. `LISTEN` and session locks need one (not a transaction pooler).
 */
export const directDatabaseUrl = (config: AppConfigShape): Option.Option<string> =>
  Option.map(
    Option.orElse(config.databaseDirectUrl ?? Option.none(), () => config.databaseUrl),
    Redacted.value
  )

/** One line for a person: `Invalid configuration: PORT: must be ...` */
export const describeConfigError = (error: ConfigError.ConfigError): string => {
  const parts: Array<string> = []
  const walk = (e: ConfigError.ConfigError): void => {
    switch (e._op) {
      case "And":
      case "Or":
        walk(e.left)
        walk(e.right)
        return
      case "InvalidData":
      case "MissingData":
      case "SourceUnavailable":
      case "Unsupported": {
        const name = e.path.join(".")
        const message = e.message.replace(/^Expected (.*) but received (.*)$/, "must be $1, not $2")
        parts.push(name && !message.startsWith(`${name}:`) ? `${name}: ${message}` : message)
        return
      }
    }
  }
  walk(error)
  return `Invalid configuration: ${[...new Set(parts)].join("; ")}`
}

/** Reads the configuration, failing with the one-line description. */
export const loadConfig: Effect.Effect<AppConfigShape, string> = Effect.either(appConfig).pipe(
  Effect.flatMap(
    Either.match({
      onLeft: (e) => Effect.fail(describeConfigError(e)),
      onRight: Effect.succeed
    })
  )
)

export const AppConfigLive = Layer.effect(AppConfig, loadConfig.pipe(Effect.orDieWith((message) => new Error(message))))
