import * as HttpServer from "@effect/platform/HttpServer"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { AccountsStartup } from "./accounts/Startup.ts"
import { EdgesLive } from "./App.ts"
import { ScheduledJobs } from "./jobs/Jobs.ts"
import { AppConfig, loadConfig } from "./platform/Config.ts"
import { DatabaseInfo, DatabaseLive } from "./platform/Database.ts"
import { HttpServerLive } from "./Server.ts"

/** config -> layers -> serve; nothing else. */
const StartupLine = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const db = yield* DatabaseInfo
    // built once the server is bound (issue 34: a port in use is an error, never a `listening` line)
    yield* HttpServer.HttpServer
    yield* Effect.logInfo(
      `vpn-api listening on ${config.host}:${config.port} (database: ${db.mode}; migrations applied now: ${
        db.migrationsApplied.map(([id, name]) => `${id}_${name}`).join(", ") || "none"
      })`
    )
  })
)

const main = Effect.gen(function* () {
  const config = yield* loadConfig.pipe(
    Effect.tapError((line) => Effect.sync(() => console.error(line))),
    Effect.orElse(() => Effect.sync(() => process.exit(1)))
  )
  const Platform = Layer.mergeAll(DatabaseLive, EdgesLive).pipe(Layer.provideMerge(AppConfig.layer(config)))
  return yield* Layer.launch(
    // the admin of ADMIN_EMAIL exists before the first request is served
    Layer.mergeAll(StartupLine.pipe(Layer.provide(HttpServerLive)), ScheduledJobs).pipe(Layer.provide(AccountsStartup), Layer.provide(Platform))
  ).pipe(
    Logger.withMinimumLogLevel(config.logLevel),
    // issue 34: another process holds the embedded DATA_DIR: one line, exit 1, nothing opened
    Effect.catchTag("DataDirInUse", (e) =>
      Effect.sync(() => {
        console.error(e.message)
        process.exit(1)
      })
    )
  )
})

// `vpn-api <command>` (the compiled binary) runs the admin CLI on the same layers
const CLI_COMMANDS = new Set(["migrate", "create-admin", "seed-demo", "jobs", "backup", "restore", "node-agent", "--help", "-h", "--version"])
if (CLI_COMMANDS.has(process.argv[2] ?? "")) {
  await import("./cli.ts")
} else {
  BunRuntime.runMain(main.pipe(Effect.provide(Logger.logFmt)), { disablePrettyLogger: true })
}
