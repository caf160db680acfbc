import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Options from "@effect/cli/Options"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Config from "effect/Config"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { ensureAdmin } from "../accounts/Startup.ts"
import { email as emailField, string } from "../platform/Fields.ts"
import { runJobsOnce } from "../jobs/Jobs.ts"
import { seedDemo } from "../demo/SeedDemo.ts"
import { backupEmbedded, restoreEmbedded } from "../platform/Backup.ts"
import { AppClock } from "../platform/Clock.ts"
import { Mailer } from "../platform/Mailer.ts"
import { AppKey } from "../platform/Crypto.ts"
import { KeyGen } from "../platform/KeyGen.ts"
import { AppConfig, loadConfig } from "../platform/Config.ts"
import { DatabaseInfo, DatabaseLive } from "../platform/Database.ts"
import { ReadSql } from "../platform/ReadSql.ts"
import { Metrics } from "../platform/Metrics.ts"
import { runAgent } from "../node/Agent.ts"
import { OpenVpnManagement } from "../node/Management.ts"
import { runOpenVpnAgent } from "../node/OpenVpnFollow.ts"
import { PushClient } from "../node/Watch.ts"
import { agentConfig, load as loadNodeConfig, nodeConnection } from "../node/AgentConfig.ts"
import { NodeClient } from "../node/NodeClient.ts"
import { openvpnAuthFromFile } from "../node/OpenVpnAuth.ts"
import { shaperFor } from "../node/Shaping.ts"
import {
  openvpnConnect,
  openvpnDisconnect,
  type OpenVpnScriptFailed,
  openvpnStateDir,
  rememberSpeed,
  type SessionEnv,
  sessionKeyOf,
  sessionOf
} from "../node/OpenVpnShaping.ts"
import { Tc, type TcFailed } from "../node/Tc.ts"
import { Wg } from "../node/Wg.ts"

/**
 * The admin CLI (issue 7): the same configuration ([D1]) and the same database layer as the
 * server, which applies pending migrations when it is built ([D3]).
 */

/** A command's failure: one line on stderr, exit code 1. */
export class CliFailure extends Schema.TaggedError<CliFailure>()("CliFailure", { message: Schema.String }) {}

/** The configuration, the migrated database and the clock, for one command. */
const withDatabase = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | ReadSql | DatabaseInfo | AppConfig | AppClock | Metrics>) =>
  Effect.gen(function* () {
    const config = yield* loadConfig.pipe(Effect.mapError((message) => new CliFailure({ message })))
    const Platform = Layer.mergeAll(DatabaseLive, AppClock.Live, Metrics.Live.pipe(Layer.provide(AppClock.Live))).pipe(
      Layer.provideMerge(AppConfig.layer(config))
    )
    return yield* effect.pipe(
      // issue 34: a server holds the embedded DATA_DIR: one line, nothing opened
      Effect.provide(Platform.pipe(Layer.mapError((e) => new CliFailure({ message: e.message })))),
      Logger.withMinimumLogLevel(config.logLevel)
    )
  })

const migrate = Command.make("migrate", {}, () =>
  withDatabase(
    Effect.gen(function* () {
      const db = yield* DatabaseInfo
      const applied = db.migrationsApplied.map(([id, name]) => `${id}_${name}`)
      yield* Console.log(`database: ${db.mode}; migrations applied now: ${applied.length > 0 ? applied.join(", ") : "none (up to date)"}`)
    })
  )
).pipe(Command.withDescription("Apply pending database migrations."))

/** The fields of [D13], checked as the API checks them. */
const adminFields = Schema.Struct({
  email: emailField("email"),
  password: string("password", { min: 8, max: 128 }),
  name: string("name", { max: 255 })
}).annotations({ parseOptions: { errors: "all" } })

/**
 * The admin's password (issue 34): `--password-stdin` (the first line of standard input), else
 * `--password` (kept for scripts; npm echoes it and `ps` shows it), else `ADMIN_PASSWORD`.
 */
const adminPassword = (options: { readonly password: Option.Option<Redacted.Redacted<string>>; readonly passwordStdin: boolean }) =>
  Effect.gen(function* () {
    if (options.passwordStdin) {
      const input = yield* Effect.promise(() => new Response(Bun.stdin.stream()).text())
      return input.split(/\r?\n/)[0] ?? ""
    }
    if (Option.isSome(options.password)) return Redacted.value(options.password.value)
    const fromEnv = process.env["ADMIN_PASSWORD"]
    if (fromEnv !== undefined && fromEnv.length > 0) return fromEnv
    return yield* new CliFailure({ message: "create-admin needs a password: --password-stdin (read from standard input) or ADMIN_PASSWORD" })
  })

const createAdmin = Command.make(
  "create-admin",
  {
    email: Options.text("email").pipe(Options.withDescription("the admin's e-mail (stored lower-cased)")),
    password: Options.redacted("password").pipe(
      Options.optional,
      Options.withDescription(
        "8-128 characters; never changed on an existing account. Shown in the process list and echoed by npm: prefer --password-stdin or ADMIN_PASSWORD"
      )
    ),
    passwordStdin: Options.boolean("password-stdin").pipe(Options.withDescription("read the password from standard input (its first line)")),
    name: Options.text("name").pipe(Options.withDefault("Administrator"), Options.withDescription("display name"))
  },
  (options) =>
    Effect.gen(function* () {
      const password = yield* adminPassword(options)
      const fields = yield* Schema.decodeUnknown(adminFields)({
        email: options.email,
        password,
        name: options.name
      }).pipe(
        Effect.mapError(
          (e) =>
            new CliFailure({
              message: ParseResult.ArrayFormatter.formatErrorSync(e)
                .map((issue) => issue.message)
                .join("\n")
            })
        )
      )
      const outcome = yield* withDatabase(ensureAdmin(fields.email, fields.password, fields.name))
      const said = {
        created: `created admin ${fields.email}`,
        promoted: `${fields.email} existed; now an admin (password unchanged)`,
        exists: `admin ${fields.email} already exists (password unchanged)`
      } as const
      yield* Console.log(said[outcome])
    })
).pipe(Command.withDescription("Create the admin user, or make an existing user of that e-mail an admin."))

const seed = Command.make("seed-demo", {}, () =>
  withDatabase(
    Effect.gen(function* () {
      const result = yield* seedDemo
      yield* Console.log(result.created.length > 0 ? `created: ${result.created.join(", ")}` : "demo data already present: nothing created")
      yield* Console.log(`admin: ${result.admin.email} / ${result.admin.password}`)
      yield* Console.log(`demo user: ${result.user.email} / ${result.user.password}`)
      for (const { server, token } of result.nodeTokens) yield* Console.log(`node token of ${server} (shown once): ${token}`)
    }).pipe(Effect.provide(Layer.mergeAll(KeyGen.Live, AppKey.Live, Mailer.Live)))
  )
).pipe(Command.withDescription("Fill the database with a demo catalogue, servers and a demo user (idempotent)."))

const runOnce = Command.make("run-once", {}, () =>
  withDatabase(
    Effect.gen(function* () {
      const report = yield* runJobsOnce
      yield* Console.log(`jobs: ${JSON.stringify(report)}`)
    }).pipe(Effect.provide(Layer.mergeAll(Mailer.Live, AppKey.Live)))
  )
).pipe(Command.withDescription("Run every scheduled job once ([D80]) and exit."))

const jobs = Command.make("jobs").pipe(Command.withDescription("Background jobs."), Command.withSubcommands([runOnce]))

/**
 * The configuration, for a command on the embedded database only. `DATABASE_URL` is looked at
 * first, so that a PostgreSQL set-up is pointed to its own tools whatever else is missing.
 */
const embeddedConfig = (postgresAdvice: string) =>
  Effect.gen(function* () {
    const url = yield* Config.string("DATABASE_URL").pipe(
      Config.option,
      Effect.orElseSucceed(() => Option.none<string>())
    )
    if (Option.isSome(Option.filter(url, (s) => s.trim().length > 0))) {
      return yield* new CliFailure({
        message: `DATABASE_URL is set: this command is for the embedded database only. ${postgresAdvice} (see docs/operations.md)`
      })
    }
    return yield* loadConfig.pipe(Effect.mapError((message) => new CliFailure({ message })))
  })

const backupFile = Args.text({ name: "file" }).pipe(Args.withDescription("the backup file"))

const backup = Command.make("backup", { file: backupFile }, ({ file }) =>
  Effect.gen(function* () {
    const config = yield* embeddedConfig("Back PostgreSQL up with pg_dump, and keep APP_KEY with it")
    const now = yield* Effect.flatMap(AppClock, (clock) => clock.now).pipe(Effect.provide(AppClock.Live))
    const done = yield* backupEmbedded({ dataDir: config.dataDir, appKey: config.appKey, file, now }).pipe(
      Effect.mapError((e) => new CliFailure({ message: e.message }))
    )
    yield* Console.log(`backup written: ${done.file} (${done.bytes} bytes, ${done.migrations} migrations applied)`)
    yield* Console.log(`it holds the database AND the application key (from ${done.keyFrom}): keep it as secret as the key itself`)
  })
).pipe(Command.withDescription("Back up the embedded database and its application key into FILE (0600; stop the server first). The file is a secret."))

const restore = Command.make(
  "restore",
  {
    file: backupFile,
    force: Options.boolean("force").pipe(Options.withDescription("replace the database and key of a non-empty DATA_DIR"))
  },
  ({ file, force }) =>
    Effect.gen(function* () {
      const config = yield* embeddedConfig("Restore PostgreSQL with pg_restore, with the APP_KEY of the dump")
      const done = yield* restoreEmbedded({ dataDir: config.dataDir, appKey: config.appKey, file, force }).pipe(
        Effect.mapError((e) => new CliFailure({ message: e.message }))
      )
      yield* Console.log(`restored into ${done.dataDir}: the database of ${done.createdAt} (${done.migrations} migrations applied) and its application key`)
      if (done.appKeyDiffers) {
        yield* Console.error(
          "warning: APP_KEY is set to another key than the backup's; stored WireGuard keys and VPN secrets will not decrypt. Unset APP_KEY (the restored DATA_DIR/app.key is used) or set it to the backup's key."
        )
      }
    })
).pipe(Command.withDescription("Restore a backup into an empty DATA_DIR (the server stopped); --force replaces a non-empty one."))

/** [D93]: the node's side; no database and no server configuration, only NODE_* variables */
const openvpnAuth = Command.make(
  "openvpn-auth",
  { file: Args.text({ name: "file" }).pipe(Args.withDescription("the file OpenVPN wrote: username and password on two lines")) },
  ({ file }) =>
    Effect.gen(function* () {
      const connection = yield* loadNodeConfig(nodeConnection).pipe(Effect.mapError((message) => new CliFailure({ message })))
      const answer = yield* openvpnAuthFromFile(file).pipe(
        Effect.provide(NodeClient.layer(connection).pipe(Layer.provide(FetchHttpClient.layer))),
        Effect.mapError((e) => new CliFailure({ message: `openvpn-auth: refused (${e.message})` }))
      )
      // OpenVPN lets the client in on exit code 0 only
      if (!answer.allowed) return yield* new CliFailure({ message: "openvpn-auth: refused" })
      // [D103]: the session's speed for the client-connect script that follows. Issue 34: kept per
      // session (the client's address and port), and a session whose speed cannot be kept is
      // refused: the connect script would find none and refuse it (fail closed)
      const dir = yield* openvpnStateDir.pipe(Effect.mapError((e) => new CliFailure({ message: `openvpn-auth: refused (OPENVPN_STATE_DIR ${String(e)})` })))
      const session = sessionKeyOf(process.env, "auth", answer.username)
      if (session === undefined) return yield* new CliFailure({ message: "openvpn-auth: refused (no untrusted_ip/untrusted_port from OpenVPN)" })
      yield* rememberSpeed(dir, session, answer.speedLimitMbps).pipe(
        Effect.mapError((e) => new CliFailure({ message: `openvpn-auth: refused (the session's speed could not be kept in ${dir}: ${e.message})` }))
      )
    })
).pipe(
  Command.withDescription(
    "OpenVPN auth-user-pass-verify script (via-file): exit 0 when POST /v1/node/openvpn/auth allows the file's username and password, else 1."
  )
)

/** [D103]: OpenVPN's client-connect / client-disconnect scripts: the session's address shaped on the tun device */
const openvpnSession = (
  name: string,
  what: string,
  run: (session: SessionEnv, dir: string) => Effect.Effect<unknown, OpenVpnScriptFailed | TcFailed, Tc>,
  /** issue 34: client-connect fails closed (exit 1: OpenVPN drops the client); client-disconnect only logs */
  refuses: boolean
) =>
  // client-connect passes a file for directives as the last argument: accepted, left empty
  Command.make(name, { file: Args.text({ name: "file" }).pipe(Args.optional) }, () =>
    Effect.gen(function* () {
      const session = sessionOf(process.env)
      if (session === undefined) return yield* new CliFailure({ message: `${name}: run by OpenVPN (dev, ifconfig_pool_remote_ip, username expected)` })
      const dir = yield* openvpnStateDir.pipe(Effect.mapError((e) => new CliFailure({ message: `${name}: OPENVPN_STATE_DIR ${String(e)}` })))
      const described = (e: OpenVpnScriptFailed | TcFailed) => `${name}: ${"command" in e ? `${e.command}: ` : ""}${e.message}`
      yield* run(session, dir).pipe(
        Effect.provide(Tc.Live),
        Effect.catchAll((e) => (refuses ? Effect.fail(new CliFailure({ message: `${described(e)}; the session is refused` })) : Console.error(described(e))))
      )
    })
  ).pipe(Command.withDescription(what))
const openvpnConnectCommand = openvpnSession(
  "openvpn-connect",
  "OpenVPN client-connect script: shape the client's ifconfig_pool_remote_ip on the tun device at the speed openvpn-auth left for this session [D103]; exit 1 (the client is refused) when none was left or tc failed.",
  openvpnConnect,
  true
)
const openvpnDisconnectCommand = openvpnSession(
  "openvpn-disconnect",
  "OpenVPN client-disconnect script: remove the session's shaping [D103].",
  openvpnDisconnect,
  false
)
const VERSION = "0.1.0"

const nodeAgent = Command.make("node-agent", {}, () =>
  Effect.gen(function* () {
    const config = yield* loadNodeConfig(agentConfig).pipe(Effect.mapError((message) => new CliFailure({ message })))
    const http = Layer.mergeAll(NodeClient.layer(config), PushClient.layer(config)).pipe(Layer.provide(FetchHttpClient.layer))
    if (Option.isSome(config.openvpnManagement)) {
      // [D106]: an OpenVPN server's agent ends the sessions of credentials no longer enabled
      return yield* runOpenVpnAgent({ pollSeconds: config.pollSeconds, version: `vpn-api ${VERSION}` }).pipe(
        Effect.provide(Layer.mergeAll(http, OpenVpnManagement.layer(config.openvpnManagement.value)))
      )
    }
    // [D103]: NODE_SHAPING (default true) shapes the peers' speeds with tc
    const shaping = yield* shaperFor(config.iface).pipe(
      Effect.mapError((e) => new CliFailure({ message: `Invalid node agent configuration: NODE_SHAPING ${String(e)}` }))
    )
    return yield* runAgent({
      ...shaping,
      iface: config.iface,
      pollSeconds: config.pollSeconds,
      reportSeconds: config.reportSeconds,
      version: `vpn-api ${VERSION}`
    }).pipe(
      // [D105]: the push stream beside the poll
      Effect.provide(Layer.mergeAll(Wg.Live, http))
    )
  })
).pipe(
  Command.withDescription(
    "Run on a VPN server: keep WG_INTERFACE's peers in sync with NODE_API_URL (node token NODE_TOKEN) (changes pushed at once over /v1/node/rpc, a poll every NODE_POLL_SECONDS as a safety net) and report its counters."
  ),
  Command.withSubcommands([openvpnAuth, openvpnConnectCommand, openvpnDisconnectCommand])
)

export const adminCli = Command.make("vpn-api").pipe(
  Command.withDescription("Admin commands of the VPN API, on the server's configuration."),
  Command.withSubcommands([migrate, createAdmin, seed, jobs, backup, restore, nodeAgent])
)

export const runCli = Command.run(adminCli, { name: "vpn-api admin CLI", version: VERSION })
