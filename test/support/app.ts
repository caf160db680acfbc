import { FetchHttpClient, HttpApiBuilder, HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { Api } from "../../src/Api.ts"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, LogLevel, Logger, ManagedRuntime, Option, Redacted } from "effect"
import { Tokens } from "../../src/accounts/Tokens.ts"
import { AppClock } from "../../src/platform/Clock.ts"
import { AppConfig, type AppConfigShape } from "../../src/platform/Config.ts"
import { AppKey } from "../../src/platform/Crypto.ts"
import { KeyGen } from "../../src/platform/KeyGen.ts"
import { Mailer } from "../../src/platform/Mailer.ts"
import { UserId } from "../../src/platform/Ids.ts"
import { Metrics } from "../../src/platform/Metrics.ts"
import type { ReadSql } from "../../src/platform/ReadSql.ts"
import { makeDomainLive } from "../../src/App.ts"
import { ApiWithDocs, makeApiWithDocs, serveMiddleware } from "../../src/Server.ts"
import { resetDatabase, sharedDatabase, sqlLayerFor } from "./database.ts"

export const testConfig = (overrides: Partial<AppConfigShape> = {}): AppConfigShape => ({
  port: 3000,
  host: "127.0.0.1",
  publicUrl: "http://localhost:3000",
  appUrl: "http://localhost:3000",
  databaseUrl: Option.none(),
  dataDir: "./data-test",
  appKey: Option.some(Redacted.make(new Uint8Array(32).fill(7))),
  smtpUrl: Option.none(),
  mailFrom: "VPN <no-reply@localhost>",
  adminEmail: Option.none(),
  adminPassword: Option.none(),
  tokenTtlDays: 30,
  trustProxy: 1,
  generalRateLimit: 0,
  corsOrigins: [],
  paymentWebhookSecret: Option.some(Redacted.make("whsec_test")),
  adminRequire2fa: false,
  metricsToken: Option.none(),
  webhooksAllowPrivate: false,
  logLevel: LogLevel.None,
  hashConcurrency: 2,
  ...overrides
})

export interface RequestOptions {
  readonly body?: unknown
  /** a raw body sent as is (for malformed JSON) */
  readonly raw?: string
  readonly token?: string
  readonly headers?: Record<string, string>
}

export interface TestResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  // biome-ignore lint/suspicious/noExplicitAny: a response body the tests read field by field
  readonly body: any
}

/**
 * The real API in process (`toWebHandler`) on the shared test database, with a clock moved
 * by hand, captured mails and deterministic keys. One per test file; call `dispose` after.
 */
export const makeTestApp = async (
  options: {
    readonly config?: Partial<AppConfigShape>
    readonly reset?: boolean
    /** another database than the shared one (fault tests) */
    readonly database?: { readonly url: string; readonly embedded: boolean }
    /** the application key of a real data directory, instead of the fixed test key */
    readonly appKey?: Uint8Array
    /** `Test` layers (`makeTestLayer`) that replace ports or services under the handlers */
    readonly swap?: Layer.Layer<never>
  } = {}
) => {
  const shared = options.database ?? (await sharedDatabase())
  const config = testConfig(options.config)
  const clock = AppClock.Test()
  const mailer = Mailer.Test()
  const Platform = Layer.mergeAll(
    sqlLayerFor(shared),
    clock.layer,
    mailer.layer,
    KeyGen.Test,
    options.appKey === undefined ? AppKey.Test : Layer.succeed(AppKey, AppKey.make(options.appKey)),
    AppConfig.layer(config),
    Metrics.Live.pipe(Layer.provide(clock.layer)),
    Logger.minimumLogLevel(config.logLevel)
  )
  // one memo map: the runtime and the handler share one SQL connection and one set of edges
  const memoMap = Effect.runSync(Layer.makeMemoMap)
  const runtime = ManagedRuntime.make(Layer.mergeAll(Platform, Tokens.Default.pipe(Layer.provide(Platform))), memoMap)
  if (options.reset !== false) await runtime.runPromise(resetDatabase)
  const { middleware } = await runtime.runPromise(serveMiddleware)
  const { dispose: disposeHandler, handler } = HttpApiBuilder.toWebHandler(
    Layer.mergeAll(options.swap === undefined ? ApiWithDocs : makeApiWithDocs(makeDomainLive(options.swap)), HttpServer.layerContext).pipe(
      Layer.provide(Platform)
    ),
    { middleware, memoMap }
  )

  const request = async (method: string, path: string, init: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { accept: "application/json", ...init.headers }
    let body: string | undefined
    if (init.raw !== undefined) {
      body = init.raw
      headers["content-type"] ??= "application/json"
    } else if (init.body !== undefined) {
      body = JSON.stringify(init.body)
      headers["content-type"] ??= "application/json"
    }
    if (init.token !== undefined) headers["authorization"] = `Bearer ${init.token}`
    const response = await handler(new Request(`http://localhost:3000${path}`, { method, headers, body: body ?? null }))
    const text = await response.text()
    let parsed: unknown = undefined
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      parsed = undefined
    }
    return { status: response.status, headers: response.headers, text, body: parsed }
  }

  // the typed client of the contract (`HttpApiClient.make(Api)`), its requests served by the same handler
  const viaHandler = Object.assign((input: RequestInfo | URL, init?: RequestInit) => handler(new Request(input, init)), {
    preconnect: fetch.preconnect
  })
  const typedClient = (token?: string) =>
    Effect.runPromise(
      HttpApiClient.make(Api, {
        baseUrl: "http://localhost:3000",
        transformClient: token === undefined ? undefined : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.provideService(FetchHttpClient.Fetch, viaHandler))
    )

  return {
    config,
    /** the API through its typed client: a changed contract breaks the test at compile time */
    client: typedClient,
    clock: clock.controls,
    outbox: mailer.outbox,
    /** `mailer.down = true`: every send fails as an unreachable SMTP server would ([D96] retries) */
    mailer: mailer.controls,
    request,
    /** the raw handler, for binary answers (a Request with a full URL, e.g. `http://localhost:3000/v1/...`) */
    fetch: (request: Request) => handler(request),
    get: (path: string, init?: RequestOptions) => request("GET", path, init),
    post: (path: string, init?: RequestOptions) => request("POST", path, init),
    put: (path: string, init?: RequestOptions) => request("PUT", path, init),
    del: (path: string, init?: RequestOptions) => request("DELETE", path, init),
    /** run an effect against the same services (direct SQL for setup and checks) */
    run: <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | ReadSql | Tokens | AppClock | AppConfig | KeyGen | AppKey | Mailer | Metrics>) =>
      runtime.runPromise(effect),
    sql: <A extends object = Record<string, unknown>>(strings: TemplateStringsArray, ...values: Array<unknown>) =>
      runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<A>(strings, ...(values as Array<never>)))),
    /** a user straight in the database, with a live token (for rooms other than accounts) */
    createUser: async (fields: { name?: string; email?: string; role?: "user" | "admin"; status?: 0 | 1 } = {}) => {
      const email = fields.email ?? `user${Math.random().toString(36).slice(2, 10)}@example.com`
      const hash = await Bun.password.hash("correct horse battery", { algorithm: "argon2id", memoryCost: 4096, timeCost: 2 })
      return runtime.runPromise(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const [user] = yield* sql<{ id: number }>`
          insert into users (name, email, password_hash, role, status)
          values (${fields.name ?? "Test User"}, ${email.toLowerCase()}, ${hash}, ${fields.role ?? "user"}, ${fields.status ?? 1})
          returning id`
          const id = UserId.make(user!.id)
          const token = yield* Effect.flatMap(Tokens, (t) => t.issue(id))
          return { id, email: email.toLowerCase(), password: "correct horse battery", token }
        })
      )
    },
    dispose: async () => {
      await disposeHandler()
      await runtime.dispose()
    }
  }
}

export type TestApp = Awaited<ReturnType<typeof makeTestApp>>
