import * as BunContext from "@effect/platform-bun/BunContext"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { runCli } from "./cli/Commands.ts"

/** `bun run cli -- <command>`: migrate, create-admin, seed-demo, jobs run-once, backup, restore, node-agent. */
runCli(process.argv).pipe(
  Effect.catchTag("CliFailure", (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => process.exit(1))))),
  Effect.provide(BunContext.layer),
  BunRuntime.runMain({ disablePrettyLogger: true })
)
