import * as BunContext from "@effect/platform-bun/BunContext"
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { runCli } from "./cli/Commands.ts"

/** `bun run cli -- <command>`: migrate, create-admin, seed-demo, jobs run-once, backup, restore, node-agent. */
/** `--help` and usage errors in plain text when the output is no terminal or NO_COLOR is set (issue 34). */
const plain = !process.stdout.isTTY || (process.env["NO_COLOR"] ?? "") !== ""
// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape sequences are what is removed
const ANSI = /\u001b\[[0-9;]*m/g
const strip = (args: ReadonlyArray<unknown>) => args.map((a) => (typeof a === "string" ? a.replace(ANSI, "") : a))
const withPlainConsole = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  plain
    ? Effect.flatMap(Effect.console, (console) =>
        Effect.withConsole(effect, {
          ...console,
          log: (...args: ReadonlyArray<unknown>) => console.log(...strip(args)),
          error: (...args: ReadonlyArray<unknown>) => console.error(...strip(args)),
          unsafe: {
            ...console.unsafe,
            log: (...args: ReadonlyArray<unknown>) => console.unsafe.log(...strip(args)),
            error: (...args: ReadonlyArray<unknown>) => console.unsafe.error(...strip(args))
          }
        })
      )
    : effect

runCli(process.argv).pipe(
  withPlainConsole,
  Effect.catchTag("CliFailure", (e) => Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => process.exit(1))))),
  Effect.provide(BunContext.layer),
  BunRuntime.runMain({ disablePrettyLogger: true })
)
